package main

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers/opcua"
)

// upstreamDoc has one opcua device of three tags (Speed without type,
// Run bool, Path by browsePath without type) and a simulated device.
func upstreamDoc(t *testing.T, policy string) *deployment.Document {
	t.Helper()
	sec := ""
	if policy != "" {
		sec = `"securityPolicy": "` + policy + `", "securityMode": "Sign", `
	}
	doc, err := deployment.DecodeTypeless([]byte(`{"clusterId": "site-a", "devices": [
  {"name": "sim", "driver": "simulated", "tags": [{"name": "C", "type": "int16", "signal": "constant", "min": 1}]},
  {"name": "up", "driver": "opcua", "endpoint": "opc.tcp://127.0.0.1:4840", ` + sec + `"tags": [
    {"name": "Speed", "nodeId": "ns=2;s=Speed"},
    {"name": "Run", "nodeId": "ns=2;s=Run", "type": "bool"},
    {"name": "Level", "browsePath": "/2:Tank/2:Level"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func ok(dataType, typ string) opcua.UpstreamTag {
	return opcua.UpstreamTag{Node: "ns=2;s=X", DataType: dataType, Type: typ, ValueRank: -1}
}

func TestJudgeUpstream(t *testing.T) {
	speed, level := deployment.TagAt{Device: 1, Tag: 0}, deployment.TagAt{Device: 1, Tag: 2}
	unknown := &opcua.Problem{Tag: "Level", BrowsePath: "/2:Tank/2:Level", Why: "the upstream resolves no node: BadNoMatch"}
	for _, tc := range []struct {
		name     string
		answer   upstreamAnswer
		types    map[deployment.TagAt]string
		problems []string
		warnings int
	}{
		{name: "types taken, given one matches",
			answer: upstreamAnswer{tags: []opcua.UpstreamTag{ok("Double", "float64"), ok("Boolean", "bool"), ok("Int32", "int32")}},
			types:  map[deployment.TagAt]string{speed: "float64", level: "int32"}},
		{name: "a given type differs",
			answer:   upstreamAnswer{tags: []opcua.UpstreamTag{ok("Double", "float64"), ok("Double", "float64"), ok("Int32", "int32")}},
			problems: []string{`devices[1].tags[1].type = "bool": the upstream's DataType is Double: accepted values are float64`}},
		{name: "unresolved browsePath",
			answer:   upstreamAnswer{tags: []opcua.UpstreamTag{ok("Double", "float64"), ok("Boolean", "bool"), {Problem: unknown}}},
			problems: []string{`devices[1].tags[2].browsePath = "/2:Tank/2:Level": accepted values are nodes the upstream resolves; the upstream resolves no node: BadNoMatch`}},
		{name: "a DataType no tag type holds, an array",
			answer: upstreamAnswer{tags: []opcua.UpstreamTag{ok("String", ""), ok("Boolean", "bool"), {Node: "ns=2;i=9", DataType: "Int32", Type: "int32", ValueRank: 1}}},
			problems: []string{
				`devices[1].tags[0].type = (missing): the upstream's DataType is String, which no tag type holds: accepted are nodes of DataType ` + mappedDataTypes,
				`devices[1].tags[2].browsePath = "/2:Tank/2:Level": accepted values are scalar Variables; the upstream's node ns=2;i=9 has ValueRank 1 (an array)`}},
		{name: "no answer",
			answer: upstreamAnswer{err: errors.New("connection refused")},
			problems: []string{
				`devices[1].tags[0].type = (missing): type not given and the upstream opc.tcp://127.0.0.1:4840 did not answer (connection refused): give the type, or deploy when the upstream answers`,
				`devices[1].tags[2].type = (missing): type not given and the upstream opc.tcp://127.0.0.1:4840 did not answer (connection refused): give the type, or deploy when the upstream answers`},
			warnings: 1},
		{name: "not asked",
			answer: noUpstream(upstreamDoc(t, ""))[1],
			problems: []string{
				`devices[1].tags[0].type = (missing): type not given and the upstream opc.tcp://127.0.0.1:4840 is not asked (--no-upstream): give the type`,
				`devices[1].tags[2].type = (missing): type not given and the upstream opc.tcp://127.0.0.1:4840 is not asked (--no-upstream): give the type`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := judgeUpstream(upstreamDoc(t, ""), map[int]upstreamAnswer{1: tc.answer})
			var got []string
			for _, p := range v.problems {
				got = append(got, p.String())
			}
			if !reflect.DeepEqual(got, tc.problems) {
				t.Errorf("problems:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.problems, "\n"))
			}
			if tc.types == nil {
				tc.types = map[deployment.TagAt]string{}
			}
			if len(tc.problems) == 0 && !reflect.DeepEqual(v.types, tc.types) {
				t.Errorf("types %v, want %v", v.types, tc.types)
			}
			if len(v.warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", v.warnings, tc.warnings)
			}
		})
	}
}

// TestAskUpstreams: only opcua devices of securityPolicy None are asked;
// a fake that outlives the deadline is cut off by it.
func TestAskUpstreams(t *testing.T) {
	asked := 0
	answers := askUpstreams(t.Context(), upstreamDoc(t, ""), func(ctx context.Context, dev deployment.Device) ([]opcua.UpstreamTag, error) {
		asked++
		return []opcua.UpstreamTag{ok("Double", "float64"), ok("Boolean", "bool"), ok("Int32", "int32")}, nil
	})
	if asked != 1 || len(answers) != 1 || answers[1].err != nil || len(answers[1].tags) != 3 {
		t.Fatalf("asked %d, answers %+v", asked, answers)
	}

	answers = askUpstreams(t.Context(), upstreamDoc(t, "Basic256Sha256"), func(context.Context, deployment.Device) ([]opcua.UpstreamTag, error) {
		t.Error("a secured upstream was asked")
		return nil, nil
	})
	v := judgeUpstream(upstreamDoc(t, "Basic256Sha256"), answers)
	if len(v.problems) != 2 || !strings.Contains(v.problems[0].Accepted, "securityPolicy Basic256Sha256") || len(v.warnings) != 1 {
		t.Fatalf("secured: %+v", v)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	answers = askUpstreams(ctx, upstreamDoc(t, ""), func(ctx context.Context, dev deployment.Device) ([]opcua.UpstreamTag, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if !errors.Is(answers[1].err, context.DeadlineExceeded) {
		t.Fatalf("a hanging upstream: %+v", answers)
	}
	// A wrong count of answers is an error, not an index out of range.
	answers = askUpstreams(t.Context(), upstreamDoc(t, ""), func(context.Context, deployment.Device) ([]opcua.UpstreamTag, error) {
		return []opcua.UpstreamTag{ok("Double", "float64")}, nil
	})
	if answers[1].err == nil {
		t.Fatal("one answer for three tags accepted")
	}
}
