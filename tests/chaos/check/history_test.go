package check

import (
	"slices"
	"testing"
	"time"
)

func TestAlarmOnce(t *testing.T) {
	clusters := append(pair(LeaseMajority), Cluster{ID: "c2", Nodes: []string{"c", "d"}, Downing: LeaseMajority})
	runCases(t, []tcase{
		{
			name: "every transition once; one id in two conditions and two ClusterIds",
			run: Run{Clusters: clusters, Alarms: []AlarmRow{
				alarm(100, "c1", "HighTemp", "t1"), alarm(200, "c1", "HighTemp", "t2"),
				alarm(300, "c1", "LowLevel", "t1"), alarm(400, "c2", "HighTemp", "t1"),
			}},
		},
		{
			name: "a duplicated transition",
			run: Run{Clusters: clusters, Alarms: []AlarmRow{
				alarm(100, "c1", "HighTemp", "t1"), alarm(200, "c1", "HighTemp", "t2"), alarm(100, "c1", "HighTemp", "t1"),
			}},
			want: []string{"alarm-once +0.100s"},
		},
	})
}

func TestAckLandedOnce(t *testing.T) {
	lease := pair(LeaseMajority)
	other := DeviceWrite{At: at(990), Device: "plc", Address: "40002", Value: "7", Writer: "a"}
	runCases(t, []tcase{
		{name: "landed before the acknowledgement", run: Run{Clusters: lease, Acks: []AckedWrite{ack(1000, "7", "a")}, Writes: []DeviceWrite{write(990, "a", "7")}}},
		{
			name: "one value written twice, landed once each time",
			run: Run{Clusters: lease, Acks: []AckedWrite{ack(1000, "7", "a"), ack(9000, "7", "a")},
				Writes: []DeviceWrite{write(990, "a", "7"), write(8990, "a", "7")}},
		},
		{name: "never reached the device", run: Run{Clusters: lease, Acks: []AckedWrite{ack(1000, "7", "a")}}, want: []string{"ack-landed-once +1.000s"}},
		{
			name: "only another register got the value",
			run:  Run{Clusters: lease, Acks: []AckedWrite{ack(1000, "7", "a")}, Writes: []DeviceWrite{other}},
			want: []string{"ack-landed-once +1.000s"},
		},
		{
			name: "the value landed long before the acknowledgement, not after it",
			run:  Run{Clusters: lease, Params: Params{AckTolerance: time.Second}, Acks: []AckedWrite{ack(5000, "7", "b")}, Writes: []DeviceWrite{write(3000, "a", "7")}},
			want: []string{"ack-landed-once +5.000s"},
		},
		{
			name: "landed twice: the old Primary's and the survivor's",
			run:  Run{Clusters: lease, Acks: []AckedWrite{ack(1000, "7", "b")}, Writes: []DeviceWrite{write(990, "a", "7"), write(1500, "b", "7")}},
			want: []string{"ack-landed-once +1.500s"},
		},
	})
}

func toggle(ms int, cluster string) Toggle { return Toggle{At: at(ms), ClusterID: cluster} }

// toggles every 3 s from from to to (ms) on c1.
func toggles(from, to int) []Toggle {
	var out []Toggle
	for ms := from; ms <= to; ms += 3000 {
		out = append(out, toggle(ms, "c1"))
	}
	return out
}

func TestAlarmStored(t *testing.T) {
	lease := pair(LeaseMajority)
	var rows []AlarmRow
	for ms := 500; ms <= 200_500; ms += 3000 {
		rows = append(rows, alarm(ms, "c1", "HighTemp", "t"+time.Duration(ms).String()))
	}
	runCases(t, []tcase{
		{name: "every toggle stored", run: Run{Clusters: lease, Toggles: toggles(0, 200_000), Alarms: rows, End: at(200_600)}},
		{
			name: "a 40 s failover window swallows its toggles",
			run: Run{Clusters: lease, Toggles: toggles(0, 200_000), End: at(200_600),
				Alarms: slices.DeleteFunc(slices.Clone(rows), func(r AlarmRow) bool { return r.At.After(at(50_000)) && r.At.Before(at(90_000)) })},
		},
		{
			name: "a Primary that stores nothing for 100 s: one violation at the first toggle",
			run: Run{Clusters: lease, Toggles: toggles(0, 200_000), End: at(200_600),
				Alarms: slices.DeleteFunc(slices.Clone(rows), func(r AlarmRow) bool { return r.At.After(at(50_000)) && r.At.Before(at(150_000)) })},
			want: []string{"alarm-stored +51.000s"},
		},
		{
			name: "nothing stored after +120 s until the end",
			run: Run{Clusters: lease, Toggles: toggles(0, 200_000), End: at(200_600),
				Alarms: slices.DeleteFunc(slices.Clone(rows), func(r AlarmRow) bool { return r.At.After(at(120_000)) })},
			want: []string{"alarm-stored +120.000s"},
		},
		{
			name: "the last minute's toggles are not judged",
			run: Run{Clusters: lease, Toggles: toggles(0, 200_000), End: at(200_600),
				Alarms: slices.DeleteFunc(slices.Clone(rows), func(r AlarmRow) bool { return r.At.After(at(150_000)) })},
		},
		{
			name: "another ClusterId's rows do not count",
			run: Run{Clusters: append(lease, Cluster{ID: "c2", Nodes: []string{"c", "d"}, Downing: LeaseMajority}), Toggles: toggles(0, 100_000), End: at(200_600),
				Alarms: []AlarmRow{alarm(500, "c1", "HighTemp", "t1"), alarm(3500, "c2", "HighTemp", "t1"), alarm(99_000, "c2", "HighTemp", "t2")}},
			want: []string{"alarm-stored +3.000s"},
		},
	})
}
