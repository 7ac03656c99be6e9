package main

import (
	"bufio"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Scrape is one reading of a node's /metrics (Prometheus text format):
// every sample by its series name and labels as written.
type Scrape map[string]float64

// ParseScrape reads Prometheus text exposition; comment lines are skipped
// and a line that is not "series value" is an error.
func ParseScrape(text string) (Scrape, error) {
	out := Scrape{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			return nil, fmt.Errorf("metrics line without a value: %q", line)
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// Sum adds every sample of the metric name whose labels hold each of the
// label="value" pairs in want (none: every sample of the name).
func (s Scrape) Sum(name string, want ...string) float64 {
	total := 0.0
	for series, v := range s {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(labels, w) {
				ok = false
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// ByLabel sums the samples of the metric name by the value of label
// (samples without it are left out).
func (s Scrape) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for series, v := range s {
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		if _, after, ok := strings.Cut(labels, label+`="`); ok {
			val, _, _ := strings.Cut(after, `"`)
			out[val] += v
		}
	}
	return out
}

// Has reports whether any sample of the metric name is present.
func (s Scrape) Has(name string) bool {
	for series := range s {
		if n, _, _ := strings.Cut(series, "{"); n == name {
			return true
		}
	}
	return false
}

// Bucket is one cumulative bucket of a Prometheus histogram: Count
// observations ≤ LE (seconds; +Inf for the last).
type Bucket struct {
	LE    float64
	Count float64
}

// Buckets are the cumulative buckets of histogram name (its _bucket
// series), summed over every other label, by upper bound.
func (s Scrape) Buckets(name string) []Bucket {
	by := map[float64]float64{}
	for series, v := range s {
		n, labels, _ := strings.Cut(series, "{")
		if n != name+"_bucket" {
			continue
		}
		_, after, ok := strings.Cut(labels, `le="`)
		if !ok {
			continue
		}
		le, _, _ := strings.Cut(after, `"`)
		bound, err := strconv.ParseFloat(le, 64) // "+Inf" parses as +Inf
		if err != nil {
			continue
		}
		by[bound] += v
	}
	out := make([]Bucket, 0, len(by))
	for le, c := range by {
		out = append(out, Bucket{le, c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LE < out[j].LE })
	return out
}

// DeltaBuckets is end − start, bucket by bucket (a bound missing at the
// start counts from zero): the observations between two scrapes.
func DeltaBuckets(start, end []Bucket) []Bucket {
	was := map[float64]float64{}
	for _, b := range start {
		was[b.LE] = b.Count
	}
	out := make([]Bucket, len(end))
	for i, b := range end {
		out[i] = Bucket{b.LE, b.Count - was[b.LE]}
	}
	return out
}

// Total is the number of observations of cumulative buckets bs.
func Total(bs []Bucket) float64 {
	if len(bs) == 0 {
		return 0
	}
	return bs[len(bs)-1].Count
}

// Quantile estimates the q-th quantile of cumulative buckets bs as
// Prometheus's histogram_quantile does: linear within the bucket that
// holds the rank, from the previous bound (0 for the first). A rank in the
// +Inf bucket answers the largest finite bound; no observation answers
// NaN.
func Quantile(bs []Bucket, q float64) float64 {
	total := Total(bs)
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bs {
		if b.Count >= rank {
			if math.IsInf(b.LE, 1) {
				return lower
			}
			in := b.Count - below
			if in <= 0 {
				return b.LE
			}
			return lower + (b.LE-lower)*(rank-below)/in
		}
		lower, below = b.LE, b.Count
	}
	return lower
}

// UpperBound is the upper bound of the bucket that holds the q-th
// quantile: the quantile is at most this (seconds; +Inf past the last
// finite bound, NaN with no observation).
func UpperBound(bs []Bucket, q float64) float64 {
	total := Total(bs)
	if total <= 0 {
		return math.NaN()
	}
	for _, b := range bs {
		if b.Count >= q*total {
			return b.LE
		}
	}
	return math.Inf(1)
}
