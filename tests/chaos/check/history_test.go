package check

import (
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
