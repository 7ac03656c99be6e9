package check

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// t0 is time zero of every test run.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

const sp = "ns=2;s=Setpoint"

// pair is ClusterId c1: nodes a and b, device plc, restart budget 20 s.
func pair(downing string) []Cluster {
	return []Cluster{{
		ID: "c1", Nodes: []string{"a", "b"}, Downing: downing, RestartBudget: 20 * time.Second,
		Devices: []string{"plc"}, Tags: map[string]Tag{sp: {Device: "plc", Address: "40001"}},
	}}
}

func write(ms int, writer, value string) DeviceWrite {
	return DeviceWrite{At: at(ms), Device: "plc", Address: "40001", Value: value, Writer: writer}
}

// writes are writes by the given writers at the given times, values "1", "2", …
func writes(pairs ...any) []DeviceWrite {
	var out []DeviceWrite
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, write(pairs[i].(int), pairs[i+1].(string), fmt.Sprint(i/2+1)))
	}
	return out
}

func level(ms int, node string, l byte) LevelSample {
	return LevelSample{At: at(ms), Node: node, ClusterID: "c1", Level: l, Answered: true}
}

func silent(ms int, node string) LevelSample {
	return LevelSample{At: at(ms), Node: node, ClusterID: "c1"}
}

// steady is node at l every 50 ms from `from` up to and excluding `to`.
func steady(node string, l byte, from, to int) []LevelSample {
	var out []LevelSample
	for ms := from; ms < to; ms += 50 {
		out = append(out, level(ms, node, l))
	}
	return out
}

// quiet is node giving no answer every 50 ms from `from` up to and
// excluding `to`.
func quiet(node string, from, to int) []LevelSample {
	var out []LevelSample
	for ms := from; ms < to; ms += 50 {
		out = append(out, silent(ms, node))
	}
	return out
}

func proc(ms int, node string, k ProcessKind) ProcessEvent {
	return ProcessEvent{At: at(ms), Node: node, Kind: k}
}

func fault(k FaultKind, from, to int, targets ...string) Fault {
	return Fault{Kind: k, Targets: targets, Start: at(from), End: at(to)}
}

func ack(ms int, value, server string) AckedWrite {
	return AckedWrite{At: at(ms), NodeID: sp, Value: value, Server: server}
}

func alarm(ms int, cluster, condition, transition string) AlarmRow {
	return AlarmRow{At: at(ms), ClusterID: cluster, Condition: condition, TransitionID: transition}
}

// join concatenates sample lists.
func join[T any](lists ...[]T) []T { return slices.Concat(lists...) }

// tcase is a run and the violations Check must find in it, each as
// "invariant +seconds".
type tcase struct {
	name string
	run  Run
	want []string
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.Start = t0
			vs := Check(tc.run)
			var got []string
			for _, v := range vs {
				got = append(got, v.Invariant+" "+rel(t0, v.At))
			}
			if !slices.Equal(got, tc.want) {
				var b strings.Builder
				for _, v := range vs {
					fmt.Fprintf(&b, "%s\n%s\n", v, v.Timeline())
				}
				t.Errorf("violations %q, want %q\n%s", got, tc.want, b.String())
			}
		})
	}
}
