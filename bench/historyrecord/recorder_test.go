package main

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/history"
)

// BenchmarkRecorder drives history.Recorder in this process the way the
// node's 10,000-tag case does — ten devices of 1,000 tags, every tag one
// count away from its last value at each poll, one poll of every device
// per op (10,000 samples), 100 ms apart in real time (the recorder's
// compaction and Pebble's own run on the wall clock, so the polls are
// paced as a node's are) — so that its CPU can be profiled without the
// data plane around it:
//
//	go test -run XXX -bench Recorder -benchtime 600x -cpuprofile cpu.out ./bench/historyrecord
//
// It reports the process's CPU per second (cores) and per sample.
func BenchmarkRecorder(b *testing.B) {
	const devices, perDevice = 10, 1000
	on := true
	doc := &deployment.Document{ClusterId: clusterID}
	for d := range devices {
		dev := deployment.Device{Name: fmt.Sprintf("dev%02d", d), Driver: deployment.DriverModbusTCP, History: deployment.History{Historize: &on}}
		for r := range perDevice {
			dev.Tags = append(dev.Tags, deployment.Tag{Name: fmt.Sprintf("r%04d", r), Type: deployment.TypeInt16})
		}
		doc.Devices = append(doc.Devices, dev)
	}
	s, err := history.Open(history.StoreOptions{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	rec := history.NewRecorder(s, history.RecorderOptions{Queue: 1 << 12})
	rec.Apply(doc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	t0 := time.Now()
	readings := make([][]history.Reading, devices)
	for d := range readings {
		readings[d] = make([]history.Reading, perDevice)
		for r := range readings[d] {
			readings[d][r] = history.Reading{Tag: doc.Devices[d].Tags[r].Name, Status: 0}
		}
	}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		<-tick.C
		at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
		for d := range readings {
			for r := range readings[d] {
				readings[d][r].Value, readings[d][r].At = int16(1000+(r+i)%7), at
			}
			rec.Offer(doc.Devices[d].Name, readings[d])
		}
	}
	cancel()
	<-done
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime)-syscall.TimevalToNsec(ru0.Utime)) +
		time.Duration(syscall.TimevalToNsec(ru1.Stime)-syscall.TimevalToNsec(ru0.Stime))
	st := rec.Status()
	b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(st.Recorded), "cpu-ns/sample")
	if st.Dropped > 0 {
		b.Logf("%d samples dropped", st.Dropped)
	}
	b.ReportMetric(float64(st.Recorded)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(s.Size())/float64(st.Recorded), "bytes/sample")
	_ = s.Close()
}
