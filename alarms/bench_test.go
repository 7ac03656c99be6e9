package alarms

import (
	"fmt"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/gate"
)

// benchDoc has one device with tags T0..T(tags-1) and alarms A0..A(n-1);
// alarm i reads tags i%tags and (i+1)%tags, so every tag is read by
// 2n/tags alarms.
func benchDoc(tb testing.TB, tags, n int) *deployment.Document {
	tb.Helper()
	dev := deployment.Device{Name: "press1", Driver: deployment.DriverModbusTCP, Address: "127.0.0.1:502"}
	for i := 0; i < tags; i++ {
		a := i
		dev.Tags = append(dev.Tags, deployment.Tag{Name: fmt.Sprintf("T%d", i), Table: deployment.TableHolding, Address: &a, Type: deployment.TypeInt16})
	}
	doc := &deployment.Document{ClusterId: "site-a", Devices: []deployment.Device{dev}}
	for i := 0; i < n; i++ {
		doc.Alarms = append(doc.Alarms, deployment.Alarm{
			Name: fmt.Sprintf("A%d", i), Source: fmt.Sprintf("press1/T%d", i%tags), Severity: 500,
			Condition: fmt.Sprintf("press1.T%d > %d || press1.T%d < -%d", i%tags, 900+i%100, (i+1)%tags, 900+i%97),
		})
	}
	if p := doc.Validate(); p != nil {
		tb.Fatal(p[0])
	}
	return doc
}

// BenchmarkEvaluate1000Alarms: tag changes per second through the engine
// (a reading's message to the actor, the evaluation of the 20 alarms that
// read the tag, and the transitions when one changes) with 1,000 alarms
// over 100 tags.
func BenchmarkEvaluate1000Alarms(b *testing.B) {
	const tags, alarms = 100, 1000
	clock := clockwork.NewFakeClock()
	n := startNode(b, "n", &bus{}, clock, newRoles(gate.RolePrimary, 1), nil)
	for i := 0; i < tags; i++ {
		n.vals.set(fmt.Sprintf("press1/T%d", i), 0, ua.StatusOK)
	}
	if err := n.e.Apply(benchDoc(b, tags, alarms)); err != nil {
		b.Fatal(err)
	}
	settle(b, n)
	keys := make([]string, tags)
	for i := range keys {
		keys[i] = fmt.Sprintf("press1/T%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		// values sweep -1000..1000, so alarms go active and back now and then
		v := int16((i*37)%2001 - 1000)
		n.vals.set(keys[i%tags], v, ua.StatusOK)
	}
	if err := n.e.sync(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tag-changes/s")
	b.ReportMetric(float64(b.N)*2*alarms/tags/elapsed.Seconds(), "evaluations/s")
	b.ReportMetric(float64(len(n.transitions()))/float64(b.N), "transitions/change")
}
