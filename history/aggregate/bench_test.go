package aggregate

import (
	"math"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// benchSamples is n Good samples one step apart from t0, a slow sine.
func benchSamples(n int, step time.Duration) []Sample {
	raw := make([]Sample, n)
	for i := range raw {
		raw[i] = Sample{At: t0.Add(time.Duration(i) * step), Value: 50 + 50*math.Sin(float64(i)/500), Status: ua.StatusGood}
	}
	return raw
}

func benchOneInterval(b *testing.B, k Kind) {
	raw := benchSamples(10_001, time.Second) // 10,000 inside, one end bound
	iv := Interval{Start: t0, End: t0.Add(10_000 * time.Second)}
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if r := Compute(k, cfg, iv, raw); r.Status != sGood|calc {
			b.Fatalf("status %v", r.Status)
		}
	}
}

// BenchmarkAverage10k is Compute of Average over one interval of 10,000
// samples.
func BenchmarkAverage10k(b *testing.B) { benchOneInterval(b, Average) }

// BenchmarkTimeAverage10k is Compute of TimeAverage over one interval of
// 10,000 samples.
func BenchmarkTimeAverage10k(b *testing.B) { benchOneInterval(b, TimeAverage) }

// benchYear lays out a year at one-hour intervals and computes k for each
// interval over one sample a minute (525,600 samples).
func benchYear(b *testing.B, k Kind) {
	raw := benchSamples(365*24*60, time.Minute)
	end := t0.Add(365 * 24 * time.Hour)
	cfg := DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ivs, err := Intervals(t0, end, time.Hour, 10_000)
		if err != nil {
			b.Fatal(err)
		}
		for _, iv := range ivs {
			if r := Compute(k, cfg, iv, raw); qualityOf(r.Status) == bad {
				b.Fatalf("%v at %s: %v", k, iv.Start, r.Status)
			}
		}
	}
}

// BenchmarkYearHourlyAverage is Intervals plus 8,760 Computes of Average.
func BenchmarkYearHourlyAverage(b *testing.B) { benchYear(b, Average) }

// BenchmarkYearHourlyTimeAverage is Intervals plus 8,760 Computes of
// TimeAverage.
func BenchmarkYearHourlyTimeAverage(b *testing.B) { benchYear(b, TimeAverage) }
