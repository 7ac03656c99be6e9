package measure

import "time"

// Histogram counts durations in fixed-width buckets from 0 up to a limit;
// longer durations land in one overflow bucket and negative ones in bucket 0
// (and are counted separately). Percentiles are the upper edge of the bucket
// that holds the requested rank, so they are exact to one bucket width.
//
// A Histogram is not safe for concurrent use; callers serialise Add and
// Merge.
type Histogram struct {
	width    time.Duration
	buckets  []uint64 // buckets[i] counts [i*width, (i+1)*width)
	overflow uint64   // durations >= len(buckets)*width
	negative uint64   // durations < 0 (also counted in buckets[0])
	total    uint64
	sum      time.Duration
	max      time.Duration
}

// NewHistogram returns a histogram with buckets of width covering [0, limit).
// It panics when width is not positive or limit is smaller than width, since
// no histogram can be built from them.
func NewHistogram(width, limit time.Duration) *Histogram {
	if width <= 0 || limit < width {
		panic("measure: histogram needs width > 0 and limit >= width")
	}
	return &Histogram{width: width, buckets: make([]uint64, int(limit/width))}
}

// Add records one duration.
func (h *Histogram) Add(d time.Duration) {
	h.total++
	if d < 0 {
		h.negative++
		h.buckets[0]++
		return
	}
	h.sum += d
	if d > h.max {
		h.max = d
	}
	i := int(d / h.width)
	if i >= len(h.buckets) {
		h.overflow++
		return
	}
	h.buckets[i]++
}

// Merge adds every count of o to h. Both must have the same width and
// limit; Merge panics otherwise, because the buckets would not line up.
func (h *Histogram) Merge(o *Histogram) {
	if o.width != h.width || len(o.buckets) != len(h.buckets) {
		panic("measure: merging histograms with different buckets")
	}
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.overflow += o.overflow
	h.negative += o.negative
	h.total += o.total
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
}

// Reset forgets every recorded duration.
func (h *Histogram) Reset() {
	clear(h.buckets)
	h.overflow, h.negative, h.total, h.sum, h.max = 0, 0, 0, 0, 0
}

// Count is the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.total }

// Negative is the number of recorded durations below zero.
func (h *Histogram) Negative() uint64 { return h.negative }

// Overflow is the number of durations at or above the limit.
func (h *Histogram) Overflow() uint64 { return h.overflow }

// Max is the largest recorded duration (0 when empty).
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average of the non-negative recorded durations (0 when
// empty).
func (h *Histogram) Mean() time.Duration {
	n := h.total - h.negative
	if n == 0 {
		return 0
	}
	return h.sum / time.Duration(n)
}

// Quantile returns the upper edge of the bucket holding the q-th fraction of
// the recorded durations (q in [0, 1]; 0.99 is p99). It returns 0 for an
// empty histogram and Max when the rank falls in the overflow bucket.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	// rank is the 1-based position of the wanted sample.
	rank := uint64(q * float64(h.total))
	if float64(rank) < q*float64(h.total) || rank == 0 {
		rank++
	}
	var seen uint64
	for i, c := range h.buckets {
		seen += c
		if seen >= rank {
			return time.Duration(i+1) * h.width
		}
	}
	return h.max
}
