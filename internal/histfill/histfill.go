// Package histfill writes a synthetic history of one tag into a history
// store (package history) before a node opens it, so that tests and
// benchmarks can read millions of values through a real node without
// recording them for days first.
package histfill

import (
	"fmt"
	"math"
	"time"

	"github.com/otopcua/otopcua/history"
)

// Analog is a slowly changing process value: a sine of amplitude 10
// around 50 with a period of 36,000 samples (an hour at 100 ms), rounded
// to two decimals, as a polled temperature after a deadband would be.
func Analog(i int) float64 {
	return math.Round((50+10*math.Sin(2*math.Pi*float64(i)/36000))*100) / 100
}

// Fill appends n Good samples of tag ("device/tag") to the store in dir,
// the first at from and one every `every`, values value(i), and packs them
// into blocks as the recorder's compaction would. The store must not be
// open elsewhere.
func Fill(dir, tag string, from time.Time, every time.Duration, n int, value func(i int) float64) error {
	s, err := history.Open(history.StoreOptions{Dir: dir})
	if err != nil {
		return err
	}
	const batch = 1 << 16
	recs := make([]history.Record, 0, batch)
	t0 := history.Ticks(from)
	step := int64(every / 100)
	if step <= 0 || every%100 != 0 {
		_ = s.Close()
		return fmt.Errorf("histfill: every %v is not a whole number of 100 ns", every)
	}
	for i := 0; i < n; i++ {
		recs = append(recs, history.Record{Tag: tag, Sample: history.Sample{At: t0 + int64(i)*step, Value: value(i)}})
		if len(recs) == batch || i == n-1 {
			if err := s.Append(recs); err != nil {
				_ = s.Close()
				return err
			}
			if err := s.Compact(tag, i == n-1); err != nil {
				_ = s.Close()
				return err
			}
			recs = recs[:0]
		}
	}
	return s.Close()
}
