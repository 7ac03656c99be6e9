package phi

import "math"

// Config holds the failure detector settings; times are milliseconds.
type Config struct {
	// Threshold above which the resource is considered unavailable.
	// Default 10.0 (the reference akka.conf; Akka's own default is 8.0).
	Threshold float64
	// MaxSampleSize is the number of recent intervals kept. Default 1000.
	MaxSampleSize int
	// MinStdDeviation floors the standard deviation, in ms. Default 100.
	MinStdDeviation int64
	// AcceptableHeartbeatPause is added to the mean interval, in ms.
	// Default 3000.
	AcceptableHeartbeatPause int64
	// FirstHeartbeatEstimate seeds the history, in ms; it is the heartbeat
	// interval. Default 1000.
	FirstHeartbeatEstimate int64
}

// DefaultConfig is heartbeat 1 s, acceptable pause 3 s, threshold 10.0,
// min std deviation 100 ms, 1000 samples.
func DefaultConfig() Config {
	return Config{Threshold: 10.0, MaxSampleSize: 1000, MinStdDeviation: 100, AcceptableHeartbeatPause: 3000, FirstHeartbeatEstimate: 1000}
}

// Detector tracks the heartbeats of one monitored resource.
type Detector struct {
	cfg        Config
	hist       history
	last       int64
	monitoring bool
}

// New returns a detector that is not monitoring yet (phi 0, available).
func New(cfg Config) *Detector {
	if cfg.MaxSampleSize < 1 {
		panic("phi: invariant violated: MaxSampleSize must be >= 1")
	}
	return &Detector{cfg: cfg}
}

// IsMonitoring reports whether at least one heartbeat was recorded.
func (d *Detector) IsMonitoring() bool { return d.monitoring }

// Heartbeat records a heartbeat received at now (ms). The interval since the
// previous heartbeat enters the history only if the resource was still
// available at now, so that a long pause does not skew the statistics.
func (d *Detector) Heartbeat(now int64) {
	if !d.monitoring {
		d.hist = d.firstHistory()
	} else if d.IsAvailable(now) {
		d.hist = d.hist.add(now-d.last, d.cfg.MaxSampleSize)
	}
	d.last = now
	d.monitoring = true
}

func (d *Detector) firstHistory() history {
	mean := d.cfg.FirstHeartbeatEstimate
	std := mean / 4
	return history{}.add(mean-std, d.cfg.MaxSampleSize).add(mean+std, d.cfg.MaxSampleSize)
}

// Phi is the suspicion level at now (ms); 0 while not monitoring.
func (d *Detector) Phi(now int64) float64 {
	if !d.monitoring {
		return 0
	}
	std := math.Max(d.hist.stdDeviation(), float64(d.cfg.MinStdDeviation))
	return Phi(float64(now-d.last), d.hist.mean()+float64(d.cfg.AcceptableHeartbeatPause), std)
}

// IsAvailable reports whether Phi(now) is below the threshold.
func (d *Detector) IsAvailable(now int64) bool { return d.Phi(now) < d.cfg.Threshold }

// Mean and StdDeviation expose the interval statistics (ms), for tests and
// diagnostics.
func (d *Detector) Mean() float64 { return d.hist.mean() }

// StdDeviation is the raw standard deviation of the kept intervals (ms).
func (d *Detector) StdDeviation() float64 { return d.hist.stdDeviation() }

// Phi is the formula: suspicion after timeDiff ms given the expected mean
// (already including the acceptable pause) and standard deviation.
func Phi(timeDiff, mean, stdDeviation float64) float64 {
	y := (timeDiff - mean) / stdDeviation
	e := math.Exp(-y * (1.5976 + 0.070566*y*y))
	if timeDiff > mean {
		return -math.Log10(e / (1.0 + e))
	}
	return -math.Log10(1.0 - 1.0/(1.0+e))
}

// history is a bounded window of intervals with running sums.
type history struct {
	intervals []int64
	sum       int64
	sqSum     int64
}

func (h history) add(interval int64, maxSize int) history {
	iv := h.intervals
	sum, sq := h.sum, h.sqSum
	if len(iv) >= maxSize {
		sum -= iv[0]
		sq -= iv[0] * iv[0]
		iv = iv[1:]
	}
	n := make([]int64, len(iv), len(iv)+1)
	copy(n, iv)
	return history{intervals: append(n, interval), sum: sum + interval, sqSum: sq + interval*interval}
}

func (h history) mean() float64 {
	if len(h.intervals) == 0 {
		return 0
	}
	return float64(h.sum) / float64(len(h.intervals))
}

func (h history) variance() float64 {
	if len(h.intervals) == 0 {
		return 0
	}
	m := h.mean()
	return float64(h.sqSum)/float64(len(h.intervals)) - m*m
}

func (h history) stdDeviation() float64 { return math.Sqrt(math.Max(0, h.variance())) }
