package dataplane_test

import (
	"sort"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// BenchmarkForwardedConfirmedWrite times a Write of the Modbus tag from
// request to response on loopback: "direct" through the Primary a (forward
// mode writes as confirmed there), "forwarded" through the Secondary b,
// which sends it to a over the cluster. Reported: p50 and p99 in ms (goal
// for forwarded: p99 ≤ 25 ms).
//
//	go test -run '^$' -bench BenchmarkForwardedConfirmedWrite -benchtime 500x ./tests/dataplane/
func BenchmarkForwardedConfirmedWrite(b *testing.B) {
	writes := &setpointLog{}
	p := startForwardPair(b, writes)
	for _, tc := range []struct {
		name string
		c    *client
	}{{"direct", connect(b, p.a)}, {"forwarded", connect(b, p.b)}} {
		b.Run(tc.name, func(b *testing.B) {
			setpoint := ua.NewStringNodeID(tc.c.namespace(), "press1/Setpoint")
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if st := tc.c.write(setpoint, int16(i%1000)); st != ua.StatusOK {
					b.Fatalf("write %d: %v", i, st)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			ms := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(ms(0.50), "p50-ms")
			b.ReportMetric(ms(0.99), "p99-ms")
		})
	}
}
