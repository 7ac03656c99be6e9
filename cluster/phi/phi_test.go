package phi

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %g", what, got, want, tol)
	}
}

// cdf turns phi back into the probability that a heartbeat would already
// have arrived.
func cdf(phi float64) float64 { return 1 - math.Pow(10, -phi) }

// Ported from Akka.NET AccrualFailureDetectorSpec.
func TestFormulaCumulativeDistribution(t *testing.T) {
	for _, c := range []struct{ td, mean, std, want float64 }{
		{0, 0, 10, 0.5}, {6, 0, 10, 0.7257}, {15, 0, 10, 0.9332}, {20, 0, 10, 0.97725},
		{25, 0, 10, 0.99379}, {35, 0, 10, 0.99977}, {22, 20, 3, 0.7475},
	} {
		near(t, "cdf(phi)", cdf(Phi(c.td, c.mean, c.std)), c.want, 0.001)
	}
	near(t, "cdf(phi(40,0,10))", cdf(Phi(40, 0, 10)), 0.99997, 0.0001)
	for i := 0; i < 40; i++ {
		if Phi(float64(i), 0, 10) >= Phi(float64(i+1), 0, 10) {
			t.Fatalf("phi not increasing at %d", i)
		}
	}
	near(t, "outlier phi(10,0,1)", Phi(10, 0, 1), 38, 1)
	near(t, "outlier phi(-25,0,1)", Phi(-25, 0, 1), 0, 0)
	if Phi(1100, 1000, 500) >= Phi(1100, 1000, 100) {
		t.Fatal("a larger std deviation must give a lower phi")
	}
}

// Akka's "realistic phi values" (mean 1000, std 100), tolerance 0.1, plus the
// values the formula gives with the defaults used here (mean interval 1000
// ms + acceptable pause 3000 ms, std deviation at its 100 ms floor).
func TestFormulaValues(t *testing.T) {
	for _, c := range []struct{ td, want float64 }{
		{0, 0.0}, {500, 0.1}, {1000, 0.3}, {1200, 1.6}, {1400, 4.7}, {1600, 10.8}, {1700, 15.3},
	} {
		near(t, "phi(td,1000,100)", Phi(c.td, 1000, 100), c.want, 0.1)
	}
	// y = (td-4000)/100; phi = -log10(e/(1+e)), e = exp(-y(1.5976+0.070566y²))
	for _, c := range []struct{ td, want float64 }{
		{3800, 0.0100}, {4000, 0.3010}, {4200, 1.6428}, {4400, 4.7367},
		{4500, 7.2999}, {4580, 10.0037}, {4600, 10.7826}, {5000, 37.5847},
	} {
		near(t, "phi(td,4000,100)", Phi(c.td, 4000, 100), c.want, 0.0005)
	}
}

func TestZeroBeforeFirstHeartbeat(t *testing.T) {
	d := New(DefaultConfig())
	if d.IsMonitoring() || d.Phi(1_000_000) != 0 || !d.IsAvailable(1_000_000) {
		t.Fatal("an unmonitored resource must have phi 0 and be available")
	}
}

func cfg(threshold float64, maxSamples int, pause int64) Config {
	return Config{Threshold: threshold, MaxSampleSize: maxSamples, MinStdDeviation: 100, AcceptableHeartbeatPause: pause, FirstHeartbeatEstimate: 1000}
}

// beats feeds heartbeats at the cumulative sums of intervals, starting at 0.
func beats(d *Detector, intervals ...int64) int64 {
	var now int64
	for i, iv := range intervals {
		if i > 0 {
			now += iv
		}
		d.Heartbeat(now)
	}
	return now
}

func TestGuessAfterOneHeartbeat(t *testing.T) {
	d := New(cfg(8, 1000, 0))
	d.Heartbeat(0)
	near(t, "phi at 1000", d.Phi(1000), 0.3, 0.2)
	near(t, "phi at 2000", d.Phi(2000), 4.5, 0.3)
	if p := d.Phi(3000); p <= 15 {
		t.Fatalf("phi at 3000 = %v, want > 15", p)
	}
}

func TestFirstIntervalAfterSecondHeartbeat(t *testing.T) {
	d := New(cfg(8, 1000, 0))
	d.Heartbeat(0)
	if d.Phi(100) <= 0 {
		t.Fatal("phi must be > 0 after first heartbeat")
	}
	d.Heartbeat(200)
	if d.Phi(300) <= 0 {
		t.Fatal("phi must be > 0 after second heartbeat")
	}
}

func TestMarkDeadIfHeartbeatsMissed(t *testing.T) {
	d := New(cfg(3, 1000, 0))
	now := beats(d, 0, 1000, 100)
	if !d.IsAvailable(now + 100) {
		t.Fatal("must be available at 1200")
	}
	if d.IsAvailable(now + 100 + 7000) {
		t.Fatal("must be unavailable at 8200")
	}
}

func TestAvailableAgainAfterHeartbeatsResume(t *testing.T) {
	d := New(cfg(8, 1000, 3000))
	intervals := []int64{0}
	for i := 0; i < 999; i++ {
		intervals = append(intervals, 1000)
	}
	now := beats(d, intervals...)
	// Akka's clock sequence after 1000 regular heartbeats: check after a
	// 5 minute pause, then alternate heartbeat / check.
	steps := []struct {
		gap       int64
		heartbeat bool
		avail     bool
	}{
		{5 * 60 * 1000, false, false},
		{100, true, false}, {900, false, true},
		{100, true, false}, {7000, false, false},
		{100, true, false}, {900, false, true},
		{100, true, false}, {900, false, true},
	}
	for i, s := range steps {
		now += s.gap
		if s.heartbeat {
			d.Heartbeat(now)
			continue
		}
		if got := d.IsAvailable(now); got != s.avail {
			t.Fatalf("step %d at %d: available=%v, want %v", i, now, got, s.avail)
		}
	}
}

func TestAcceptSomeMissingHeartbeats(t *testing.T) {
	d := New(cfg(8, 1000, 3000))
	now := beats(d, 0, 1000, 1000, 1000)
	if !d.IsAvailable(now + 4000) {
		t.Fatal("a 4 s gap is within the 3 s acceptable pause")
	}
	d.Heartbeat(now + 4000)
	if !d.IsAvailable(now + 5000) {
		t.Fatal("must stay available")
	}
}

func TestFailAfterAcceptableMissingHeartbeats(t *testing.T) {
	d := New(cfg(8, 1000, 3000))
	now := beats(d, 0, 1000, 1000, 1000, 1000, 1000)
	if !d.IsAvailable(now + 500) {
		t.Fatal("must be available")
	}
	d.Heartbeat(now + 1000)
	if d.IsAvailable(now + 1000 + 5000) {
		t.Fatal("must be unavailable after 5 s")
	}
}

func TestMaxSampleSize(t *testing.T) {
	d := New(cfg(8, 3, 3000))
	now := beats(d, 0, 100, 100, 100)
	phi1 := d.Phi(now + 100)
	for _, iv := range []int64{600, 500, 500, 500} {
		now += iv
		d.Heartbeat(now)
	}
	phi2 := d.Phi(now + 500)
	near(t, "phi after the window slid", phi2, phi1, 1e-9)
}

func TestHistoryMeanVariance(t *testing.T) {
	var h history
	for _, s := range []int64{100, 200, 125, 340, 130} {
		h = h.add(s, 20)
	}
	near(t, "mean", h.mean(), 179, 1e-5)
	near(t, "variance", h.variance(), 7584, 1e-5)
	one := history{}.add(1000, 600)
	near(t, "variance of one sample", one.variance(), 0, 1e-5)
}

// With the defaults (heartbeat 1 s, acceptable pause 3 s, threshold 10):
//
//   - steady heartbeats: mean 1000 ms, std deviation below its 100 ms floor,
//     so phi = 10 at 4000 + 5.8×100 ≈ 4580 ms of silence — the pause plus
//     about 1.6 s;
//   - a peer heard only once (history 750/1250 ms: std 250): phi = 10 at
//     4000 + 5.8×250 ≈ 5450 ms of silence.
func TestDefaultsBecomeUnavailableAfterPausePlusMargin(t *testing.T) {
	d := New(DefaultConfig())
	var now int64
	for i := 0; i < 30; i++ {
		d.Heartbeat(now)
		now += 1000
	}
	last := now - 1000
	near(t, "mean", d.Mean(), 1000, 1e-9)
	for _, c := range []struct {
		silence int64
		avail   bool
	}{{3000, true}, {4000, true}, {4500, true}, {4579, true}, {4580, false}, {6000, false}} {
		if got := d.IsAvailable(last + c.silence); got != c.avail {
			t.Errorf("steady: after %d ms of silence available=%v (phi %.3f), want %v", c.silence, got, d.Phi(last+c.silence), c.avail)
		}
	}
	once := New(DefaultConfig())
	once.Heartbeat(0)
	for _, c := range []struct {
		silence int64
		avail   bool
	}{{5000, true}, {5449, true}, {5450, false}} {
		if got := once.IsAvailable(c.silence); got != c.avail {
			t.Errorf("one heartbeat: after %d ms available=%v (phi %.3f), want %v", c.silence, got, once.Phi(c.silence), c.avail)
		}
	}
}

func TestLongPauseNotRecorded(t *testing.T) {
	d := New(DefaultConfig())
	now := beats(d, 0, 1000, 1000, 1000)
	before := d.Mean()
	d.Heartbeat(now + 60_000) // arrives after the resource was unavailable
	if d.Mean() != before {
		t.Fatalf("the interval across an outage must not enter the history: mean %v -> %v", before, d.Mean())
	}
}
