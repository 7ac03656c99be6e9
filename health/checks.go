package health

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// Check is one named check of /healthz or /readyz.
type Check struct {
	// Name identifies the check in the JSON body and in ?exclude=.
	Name string
	// HealthyOnly checks run only for /readyz?healthy=1 (the ServiceLevel
	// band an orchestrator routes clients by).
	HealthyOnly bool
	// Run returns nil when the check passes, else why it does not. It is
	// called on request goroutines, concurrently, and must return quickly.
	Run func() error
}

// Probes are the checks of the two endpoints: /healthz runs Live (is the
// process worth keeping?), /readyz runs Ready (should clients and the
// orchestrator send it work?).
type Probes struct {
	Live  []Check
	Ready []Check
}

// CheckResult is one check's outcome in a response body.
type CheckResult struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is the JSON body of /healthz and /readyz: status "ok" (healthz),
// "ready" or "not ready" (readyz) or "unhealthy" (healthz); Failed names
// the checks that failed, Checks lists every check that ran in order.
type Report struct {
	Status string        `json:"status"`
	Failed []string      `json:"failed,omitempty"`
	Checks []CheckResult `json:"checks"`
}

// OK reports whether every check passed.
func (r Report) OK() bool { return len(r.Failed) == 0 }

// runChecks runs checks except the excluded ones and HealthyOnly ones
// unless healthy.
func runChecks(checks []Check, healthy bool, exclude []string) Report {
	r := Report{Checks: []CheckResult{}}
	for _, c := range checks {
		if (c.HealthyOnly && !healthy) || slices.Contains(exclude, c.Name) {
			continue
		}
		res := CheckResult{Name: c.Name, OK: true}
		if err := c.Run(); err != nil {
			res.OK, res.Detail = false, err.Error()
			r.Failed = append(r.Failed, c.Name)
		}
		r.Checks = append(r.Checks, res)
	}
	return r
}

// maxExcludes bounds ?exclude= values; more is a 400.
const maxExcludes = 16

// parseProbeQuery reads ?healthy= and ?exclude= of a probe request. Every
// excluded name must be one of checks'; healthy accepts 1/true/0/false/"".
func parseProbeQuery(r *http.Request, checks []Check) (healthy bool, exclude []string, err error) {
	q := r.URL.Query()
	switch v := q.Get("healthy"); strings.ToLower(v) {
	case "", "0", "false":
	case "1", "true":
		healthy = true
	default:
		return false, nil, fmt.Errorf("healthy=%q: accepted values are 1, true, 0, false", v)
	}
	exclude = q["exclude"]
	if len(exclude) > maxExcludes {
		return false, nil, fmt.Errorf("%d exclude= values: at most %d are accepted", len(exclude), maxExcludes)
	}
	names := make([]string, 0, len(checks))
	for _, c := range checks {
		names = append(names, c.Name)
	}
	for _, e := range exclude {
		if !slices.Contains(names, e) {
			return false, nil, fmt.Errorf("exclude=%q: accepted values are the check names %s", e, strings.Join(names, ", "))
		}
	}
	return healthy, exclude, nil
}

// writeReport answers with r as JSON: 200 when every check passed, else
// 503.
func writeReport(w http.ResponseWriter, r Report) {
	code := http.StatusOK
	if !r.OK() {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(r)
}

func (s *HTTPServer) serveProbe(w http.ResponseWriter, req *http.Request, checks []Check, ok, failed string) {
	healthy, exclude, err := parseProbeQuery(req, checks)
	if err != nil {
		plain(w, http.StatusBadRequest, err.Error())
		return
	}
	r := runChecks(checks, healthy, exclude)
	r.Status = ok
	if !r.OK() {
		r.Status = failed
	}
	writeReport(w, r)
}

// Cached wraps a check's Run so that it runs at most once per every:
// callers within every of the last run get its result, and callers that
// arrive while a run is in flight wait for that run instead of starting
// their own. A probe endpoint hit 100,000 times a second then costs one
// run per period, however slow the check. every ≤ 0 caches nothing but
// still merges concurrent calls. Safe for concurrent use.
func Cached(every time.Duration, run func() error) func() error {
	c := &cachedCheck{every: every, run: run}
	return c.call
}

type cachedCheck struct {
	every time.Duration
	run   func() error

	mu       sync.Mutex
	at       time.Time     // when the cached result was taken (zero: none yet); mu must be held
	err      error         // the cached result; mu must be held
	inflight chan struct{} // closed when the running call ends; mu must be held
}

func (c *cachedCheck) call() error {
	c.mu.Lock()
	for {
		if !c.at.IsZero() && time.Since(c.at) < c.every {
			err := c.err
			c.mu.Unlock()
			return err
		}
		if c.inflight == nil {
			break
		}
		wait := c.inflight
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
		if c.every <= 0 { // the run waited for has just stored its result
			err := c.err
			c.mu.Unlock()
			return err
		}
	}
	done := make(chan struct{})
	c.inflight = done
	c.mu.Unlock()

	err := c.run()

	c.mu.Lock()
	c.at, c.err, c.inflight = time.Now(), err, nil
	c.mu.Unlock()
	close(done)
	return err
}
