package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

func TestClientHistory(t *testing.T) {
	at := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	f := &fakeSession{history: []*ua.DataValue{
		{Value: ua.MustVariant(uint16(7)), SourceTimestamp: at},
		{Value: ua.MustVariant(uint16(8)), SourceTimestamp: at.Add(time.Second), Status: ua.StatusBadCommunicationError},
		{Value: ua.MustVariant(uint16(9)), SourceTimestamp: at.Add(2 * time.Second)},
	}}
	withFake(t, f, nil)
	code, out, errOut := runClient("history", "ns=2;s=press1/FastCounter", "-u", "opc.tcp://a:4840", "--from", "2026-12-07T11:00:00Z", "--to", "2026-12-07T13:00:00Z")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || lines[0] != "2026-12-07T12:00:00.000Z  7  UInt16  Good" || !strings.Contains(lines[1], "BadCommunicationError") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	raw, ok := f.historyAsked.(*ua.ReadRawModifiedDetails)
	if !ok || !raw.StartTime.Equal(at.Add(-time.Hour)) || !raw.EndTime.Equal(at.Add(time.Hour)) {
		t.Fatalf("details %+v", f.historyAsked)
	}

	code, out, _ = runClient("history", "ns=2;s=press1/FastCounter", "-u", "opc.tcp://a:4840", "--json", "--max", "2")
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"value":7`) || !strings.Contains(out, `"sourceTimestamp":"2026-12-07T12:00:00Z"`) {
		t.Fatalf("--json --max 2: exit %d\n%s", code, out)
	}

	code, _, errOut = runClient("history", "ns=2;s=press1/FastCounter", "-u", "opc.tcp://a:4840", "--from", "-2h", "--aggregate", "average", "--interval", "10m")
	pd, ok := f.historyAsked.(*ua.ReadProcessedDetails)
	if code != 0 || !ok || pd.ProcessingInterval != 600000 || len(pd.AggregateType) != 1 || !pd.AggregateType[0].Equal(ua.NewNumericNodeID(0, id.AggregateFunction_Average)) ||
		pd.EndTime.Sub(pd.StartTime) < 2*time.Hour-time.Minute || pd.EndTime.Sub(pd.StartTime) > 2*time.Hour+time.Minute {
		t.Fatalf("--aggregate average: exit %d %s, details %+v", code, errOut, f.historyAsked)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "yesterday"}, `--from "yesterday": accepted values are RFC 3339 times`},
		{[]string{"--aggregate", "Median"}, `--aggregate "Median": accepted values are Interpolative, Average`},
		{[]string{"--interval", "1m"}, "--interval needs --aggregate"},
		{[]string{"--max", "-1"}, "--max -1"},
		{[]string{"--from", "2026-12-07T12:00:00Z", "--to", "2026-12-07T12:00:00Z"}, "--from and --to are the same time"},
	} {
		code, _, errOut := runClient(append([]string{"history", "ns=2;s=press1/FastCounter", "-u", "opc.tcp://a:4840"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}

	f.history, f.historyStatus = nil, ua.StatusBadHistoryOperationUnsupported
	code, _, errOut = runClient("history", "ns=2;s=press1/Setpoint", "-u", "opc.tcp://a:4840")
	if code != 1 || !strings.Contains(errOut, "BadHistoryOperationUnsupported") {
		t.Fatalf("a node without history: exit %d, %q", code, errOut)
	}
}
