package alarms_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	gopcua "github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jackc/pgx/v5"

	"github.com/otopcua/otopcua/tests/procs"
)

func operand(typ uint32, path ...string) *ua.SimpleAttributeOperand {
	qs := make([]*ua.QualifiedName, len(path))
	for i, p := range path {
		qs[i] = &ua.QualifiedName{Name: p}
	}
	return &ua.SimpleAttributeOperand{TypeDefinitionID: ua.NewNumericNodeID(0, typ), BrowsePath: qs, AttributeID: ua.AttributeIDValue}
}

// historyOverOPCUA reads the alarm history of the Server object with
// HistoryRead (ReadEventDetails), every page, and returns each event's
// ConditionName, ActiveState/Id and Time.
func historyOverOPCUA(t *testing.T, n *procs.Node) []struct {
	Name   string
	Active bool
	Time   time.Time
} {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := gopcua.NewClient(n.Endpoint(), gopcua.SecurityMode(ua.MessageSecurityModeNone), gopcua.AutoReconnect(false))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	d := &ua.ReadEventDetails{NumValuesPerNode: 100, StartTime: time.Now().Add(-time.Hour), EndTime: time.Now().Add(time.Hour),
		Filter: &ua.EventFilter{SelectClauses: []*ua.SimpleAttributeOperand{
			operand(id.ConditionType, "ConditionName"), operand(id.AlarmConditionType, "ActiveState", "Id"), operand(id.BaseEventType, "Time"),
		}, WhereClause: &ua.ContentFilter{}}}
	var out []struct {
		Name   string
		Active bool
		Time   time.Time
	}
	var cp []byte
	for page := 0; page < 100; page++ {
		resp, err := c.HistoryReadEvent(ctx, []*ua.HistoryReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server), DataEncoding: &ua.QualifiedName{}, ContinuationPoint: cp}}, d)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Results[0]
		if r.StatusCode != ua.StatusOK && r.StatusCode != ua.StatusGoodNoData {
			t.Fatalf("HistoryRead page %d: %v", page, r.StatusCode)
		}
		if he, ok := r.HistoryData.Value.(*ua.HistoryEvent); ok {
			for _, e := range he.Events {
				f := e.EventFields
				name, _ := f[0].Value().(string)
				active, _ := f[1].Value().(bool)
				at, _ := f[2].Value().(time.Time)
				out = append(out, struct {
					Name   string
					Active bool
					Time   time.Time
				}{name, active, at})
			}
		}
		if len(r.ContinuationPoint) == 0 {
			return out
		}
		cp = r.ContinuationPoint
	}
	t.Fatal("HistoryRead never ended")
	return nil
}

// checkHistoryRead compares HistoryRead of the Server object with
// alarm_history: the same rows, in time order.
func checkHistoryRead(t *testing.T, r *rig, n *procs.Node) {
	t.Helper()
	rows, err := r.history()
	if err != nil {
		t.Fatal(err)
	}
	got := historyOverOPCUA(t, n)
	if len(got) != len(rows) {
		t.Fatalf("HistoryRead on %s returned %d events, alarm_history holds %d rows", n.Name, len(got), len(rows))
	}
	for i, e := range got {
		if e.Name != alarmName || e.Active != rows[i].Active || !e.Time.Equal(rows[i].Time) {
			t.Fatalf("HistoryRead event %d = %+v, row %+v", i, e, rows[i])
		}
	}
}

// checkAlarmMetrics: the alarm and historian series an operator reads.
func checkAlarmMetrics(t *testing.T, n *procs.Node) {
	t.Helper()
	body, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, series := range []string{
		fmt.Sprintf(`otopcua_alarms_active{cluster_id=%q}`, clusterID),
		`otopcua_alarm_transitions_total{`,
		`otopcua_historian_queue_depth{`,
		`otopcua_historian_drained_total{`,
		`# HELP otopcua_alarms_active `,
	} {
		if !strings.Contains(body, series) {
			t.Errorf("%s /metrics lacks %s", n.Name, series)
		}
	}
}

// latency reports how long each transition took from its reading to its
// alarm_history row (the database's inserted_at; one machine, one clock).
func (r *rig) latency(t *testing.T) (p50, p99, worst time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.db.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var a, b, c float64
	err = conn.QueryRow(ctx, `SELECT
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM inserted_at - event_time)),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM inserted_at - event_time)),
		max(extract(epoch FROM inserted_at - event_time))::float8
		FROM alarm_history WHERE cluster_id = $1 AND kind IN ('active', 'inactive')`, clusterID).Scan(&a, &b, &c)
	if err != nil {
		t.Fatal(err)
	}
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	return sec(a), sec(b), sec(c)
}
