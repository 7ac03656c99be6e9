package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// Sample is one reading of the host process.
type Sample struct {
	At      time.Duration `json:"at_ns"` // since the soak started
	Phase   Phase         `json:"phase"`
	RSS     uint64        `json:"rss"` // bytes (VmRSS)
	FDs     int           `json:"fds"` // entries of /proc/PID/fd
	Threads int           `json:"threads"`
	// HeapAlloc is the host's go_memstats_heap_alloc_bytes from its
	// /metrics (0 when it could not be read): live objects and garbage
	// not yet collected. Against RSS it tells memory in use from memory
	// the runtime freed but still holds.
	HeapAlloc uint64 `json:"heap_alloc"`
}

// readSample reads pid's RSS, open file descriptors and threads.
func readSample(pid int) (Sample, error) {
	var s Sample
	rss, err := measure.RSS(pid)
	if err != nil {
		return s, err
	}
	s.RSS = rss
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, fmt.Errorf("/proc/%d/fd: %w", pid, err)
	}
	s.FDs = len(ents)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	if s.Threads, err = parseThreads(b); err != nil {
		return s, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return s, nil
}

// parseThreads returns the Threads value of a /proc/<pid>/status text.
func parseThreads(status []byte) (int, error) {
	for line := range bytes.SplitSeq(status, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			return strconv.Atoi(string(bytes.TrimSpace(rest)))
		}
	}
	return 0, errors.New("no Threads line")
}

// parseHeapAlloc returns go_memstats_heap_alloc_bytes of a Prometheus
// text exposition.
func parseHeapAlloc(metrics string) (uint64, error) {
	for line := range strings.SplitSeq(metrics, "\n") {
		if rest, ok := strings.CutPrefix(line, "go_memstats_heap_alloc_bytes "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				return 0, fmt.Errorf("go_memstats_heap_alloc_bytes: %w", err)
			}
			return uint64(v), nil
		}
	}
	return 0, errors.New("no go_memstats_heap_alloc_bytes")
}

// Sampler reads the host process every interval and keeps every sample.
// Its methods are safe for concurrent use.
type Sampler struct {
	pid     int
	start   time.Time
	phase   func() Phase
	metrics func() (string, error) // the host's /metrics; nil: none

	mu      sync.Mutex
	samples []Sample // mu must be held.
	lastErr error    // mu must be held.
}

// NewSampler samples pid; phase names the soak's phase at each reading;
// metrics, when not nil, fetches the host's Prometheus /metrics for the
// Go heap.
func NewSampler(pid int, start time.Time, phase func() Phase, metrics func() (string, error)) *Sampler {
	return &Sampler{pid: pid, start: start, phase: phase, metrics: metrics}
}

// Run samples every interval until ctx ends.
func (s *Sampler) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.Take()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Take reads one sample now and returns it.
func (s *Sampler) Take() (Sample, error) {
	sm, err := readSample(s.pid)
	if err == nil && s.metrics != nil {
		if m, merr := s.metrics(); merr == nil {
			sm.HeapAlloc, _ = parseHeapAlloc(m)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.lastErr = err
		return sm, err
	}
	sm.At, sm.Phase = time.Since(s.start), s.phase()
	s.samples = append(s.samples, sm)
	return sm, nil
}

// Samples returns a copy of every sample so far and the last read error.
func (s *Sampler) Samples() ([]Sample, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sample(nil), s.samples...), s.lastErr
}
