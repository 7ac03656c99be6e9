package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// Write histograms: 10 µs buckets up to 5 s.
const (
	writeWidth = 10 * time.Microsecond
	writeLimit = 5 * time.Second
	// landTimeout is how long a write may take to reach the register
	// before it counts as not landed (OpcUa:WriteTimeout is 2 s).
	landTimeout = 3 * time.Second
	// writeGapMax bounds the random pause between two writes, so that
	// writes fall at every phase of the device's poll cycle.
	writeGapMax = 20 * time.Millisecond
)

// WriteFigures are the results of the write part.
type WriteFigures struct {
	Writes int `json:"writes"`
	// Good counts writes answered Good; Landed those whose value the
	// device's register held within landTimeout.
	Good   int    `json:"good"`
	Landed int    `json:"landed"`
	First  string `json:"first_error,omitempty"`
	// Register: Write request sent → the device's register holds the
	// value (seen by a loop reading the register, yielding between reads).
	RegisterP50Ms float64 `json:"register_p50_ms"`
	RegisterP99Ms float64 `json:"register_p99_ms"`
	RegisterMaxMs float64 `json:"register_max_ms"`
	// Response: Write request sent → its response read off the socket
	// (confirmed mode answers after the device did).
	ResponseP50Ms float64 `json:"response_p50_ms"`
	ResponseP99Ms float64 `json:"response_p99_ms"`
	ResponseMaxMs float64 `json:"response_max_ms"`
	// ReadLoopMaxUs is the longest pause between two reads of the register
	// while waiting: the resolution of the register figures.
	ReadLoopMaxUs float64 `json:"read_loop_max_us"`
}

// writeOutcome is one Write request's answer.
type writeOutcome struct {
	sent  time.Time
	reply uaclient.Reply
	err   error
}

// measureWrites writes n distinct values, one at a time, to the tag node
// (register reg of dev) and times each: from sending the Write request to
// the register holding the value, and to the Write response.
func measureWrites(sess *session, node *ua.NodeID, dev *fielddevice.Device, reg uint16, n int, seed uint64) WriteFigures {
	f := WriteFigures{Writes: n}
	landed := measure.NewHistogram(writeWidth, writeLimit)
	answered := measure.NewHistogram(writeWidth, writeLimit)
	rng := rand.New(rand.NewPCG(seed, 1))
	var loopMax time.Duration
	fail := func(format string, args ...any) {
		if f.First == "" {
			f.First = fmt.Sprintf(format, args...)
		}
	}
	for i := range n {
		v := int16(1 + i%32767)
		if uint16(v) == dev.Holding(reg) {
			v++
		}
		req := &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: node, AttributeID: ua.AttributeIDValue,
			Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}}
		done := make(chan writeOutcome, 1)
		go func() {
			sent := time.Now()
			rep, err := sess.ch.Request(context.Background(), req, sess.s.Auth(), 5*time.Second)
			done <- writeOutcome{sent: sent, reply: rep, err: err}
		}()
		start := time.Now()
		var at time.Time
		last := start
		for {
			now := time.Now()
			loopMax = max(loopMax, now.Sub(last))
			last = now
			if dev.Holding(reg) == uint16(v) {
				at = now
				break
			}
			if now.Sub(start) > landTimeout {
				break
			}
			runtime.Gosched()
		}
		o := <-done
		switch {
		case o.err != nil:
			fail("write %d: %v", i, o.err)
		default:
			if st := writeStatus(o.reply.Body); st != ua.StatusOK {
				fail("write %d answered %v", i, st)
			} else {
				f.Good++
				answered.Add(o.reply.At.Sub(o.sent))
			}
		}
		if at.IsZero() {
			fail("write %d: the register did not hold %d within %v", i, v, landTimeout)
		} else {
			f.Landed++
			landed.Add(at.Sub(o.sent))
		}
		time.Sleep(time.Duration(rng.Int64N(int64(writeGapMax)))) // pacing, not a wait for a condition
	}
	f.RegisterP50Ms, f.RegisterP99Ms, f.RegisterMaxMs = quantileMs(landed, 0.5), quantileMs(landed, 0.99), msOf(landed.Max())
	f.ResponseP50Ms, f.ResponseP99Ms, f.ResponseMaxMs = quantileMs(answered, 0.5), quantileMs(answered, 0.99), msOf(answered.Max())
	f.ReadLoopMaxUs = float64(loopMax) / float64(time.Microsecond)
	return f
}

// writeStatus is the result of the one write of a WriteResponse body, or
// the service's status when it failed.
func writeStatus(body []byte) ua.StatusCode {
	if code := uawire.CheckService(body); code != ua.StatusOK {
		return code
	}
	_, svc, err := ua.DecodeService(body)
	if err != nil {
		return ua.StatusBadDecodingError
	}
	switch r := svc.(type) {
	case *ua.WriteResponse:
		if st := r.ResponseHeader.ServiceResult; st != ua.StatusOK {
			return st
		}
		if len(r.Results) != 1 {
			return ua.StatusBadUnexpectedError
		}
		return r.Results[0]
	case *ua.ServiceFault:
		return r.ResponseHeader.ServiceResult
	}
	return ua.StatusBadUnknownResponse
}
