package fieldrig

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLayout(t *testing.T) {
	l := Layout{Devices: 3, PerDevice: 4}
	if l.Tags() != 12 {
		t.Fatalf("Tags = %d, want 12", l.Tags())
	}
	if d, r := l.Of(7); d != 1 || r != 3 {
		t.Fatalf("Of(7) = %d, %d; want device 1, register 3", d, r)
	}
	if n := l.Name(7); n != "dev01/r0003" {
		t.Fatalf("Name(7) = %q, want dev01/r0003", n)
	}
	ids := NodeIDs(2, l)
	if len(ids) != 12 || ids[7].String() != "ns=2;s=dev01/r0003" {
		t.Fatalf("NodeIDs: %d, [7] = %v", len(ids), ids[7])
	}
}

func TestDocument(t *testing.T) {
	l := Layout{Devices: 2, PerDevice: 3}
	addrs := []string{"127.0.0.1:1502", "127.0.0.1:1503"}
	b, err := Document("c1", l, addrs, 100*time.Millisecond, 4)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ClusterID string `json:"clusterId"`
		Devices   []struct {
			Name, Address, PollInterval string
			Tags                        []map[string]any
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ClusterID != "c1" || len(doc.Devices) != 2 || doc.Devices[1].Name != "dev01" || doc.Devices[1].Address != addrs[1] || doc.Devices[1].PollInterval != "100ms" {
		t.Fatalf("document: %s", b)
	}
	for d, dev := range doc.Devices {
		for r, tag := range dev.Tags {
			_, has := tag["writable"]
			if want := d*l.PerDevice+r == 4; has != want {
				t.Errorf("%s/%v: writable key %v, want %v", dev.Name, tag["name"], has, want)
			}
		}
	}
	none, err := Document("c1", l, addrs, time.Second, -1)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(none), "writable") {
		t.Fatalf("no tag should be writable: %s", none)
	}
	if _, err := Document("c1", l, addrs[:1], time.Second, -1); err == nil {
		t.Fatal("a document with a missing device address must fail")
	}
}

func TestTick(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		Tick(ctx, time.Millisecond, func() {
			if n.Add(1) == 3 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Tick did not return after ctx ended")
	}
	if n.Load() < 3 {
		t.Fatalf("step ran %d times, want at least 3", n.Load())
	}
}
