package host

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/historian"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/opcua/addrspace"
)

// TestDeviceFolderHistoryPagesAcrossSharedTimes: a device folder's alarm
// history is read in pages of the whole ClusterId's rows; rows that share
// a time across a page boundary are neither skipped (oldest first) nor
// returned twice (newest first), also when more rows share one instant
// than a page holds.
func TestDeviceFolderHistoryPagesAcrossSharedTimes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := configdb.Open(ctx, "sqlite", "file:"+filepath.Join(dir, "config.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	local, err := localdb.Open(ctx, filepath.Join(dir, "local.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	h, err := historian.New(historian.Options{ClusterID: "site", Local: local, Central: db, Gate: func() (bool, string, uint64) { return false, "test", 0 }})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	// In id order: t1 d2 d2 d2 | t2 d1 d2 d2 d1 | t3 d1. With pages of 3
	// the second d1 at t2 falls behind a page boundary and four rows share
	// t2.
	var rows []configdb.AlarmHistoryRow
	for i, r := range []struct {
		sec    int
		device string
	}{{1, "d2"}, {1, "d2"}, {1, "d2"}, {2, "d1"}, {2, "d2"}, {2, "d2"}, {2, "d1"}, {3, "d1"}} {
		rows = append(rows, configdb.AlarmHistoryRow{ClusterID: "site", Alarm: "A", TransitionID: fmt.Sprintf("t%02d", i),
			Kind: "active", EventTime: t0.Add(time.Duration(r.sec) * time.Second), Severity: 500, Source: r.device + "/Level",
			Active: true, Enabled: true, Payload: []byte("{}")})
	}
	if _, err := db.InsertAlarmHistory(ctx, rows); err != nil {
		t.Fatal(err)
	}
	space := dataplane.NewSpace(addrspace.New(addrspace.Options{}), "site")
	a := alarmHistory{h: h, space: space, clusterID: "site"}
	read := func(start, end time.Time) []string {
		t.Helper()
		evs, err := a.ReadEvents(ctx, ua.NewStringNodeID(space.Namespace(), "d1"), start, end, 3)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		ids := map[string]bool{}
		for _, e := range evs {
			if ids[string(e.EventID)] {
				t.Fatalf("event %x twice", e.EventID)
			}
			ids[string(e.EventID)] = true
			out = append(out, fmt.Sprintf("%s@%d", e.SourceName, int(e.Time.Sub(t0).Seconds())))
		}
		return out
	}
	if got, want := read(t0, t0.Add(time.Minute)), []string{"d1/Level@2", "d1/Level@2", "d1/Level@3"}; !slices.Equal(got, want) {
		t.Errorf("oldest first: %v, want %v", got, want)
	}
	if got, want := read(t0.Add(time.Minute), t0), []string{"d1/Level@3", "d1/Level@2", "d1/Level@2"}; !slices.Equal(got, want) {
		t.Errorf("newest first: %v, want %v", got, want)
	}
}
