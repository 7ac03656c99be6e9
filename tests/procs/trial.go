package procs

import (
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"testing"
)

// Run lets this package, written for tests, run in a command (the bench
// harnesses): f gets a testing.TB whose Fatal ends the trial (not the
// program) and whose cleanups — killing every process it started — run
// when the trial ends. Run returns the trial's failure, if any. Only the
// methods this package calls are implemented.
func Run(name string, f func(t testing.TB)) (err error) {
	r := &trial{name: name}
	currentMu.Lock()
	current = r
	currentMu.Unlock()
	defer func() {
		if p := recover(); p != nil {
			if fe, ok := p.(trialFatal); ok {
				err = errors.New(fe.msg)
			} else {
				panic(p)
			}
		}
		r.cleanup()
	}()
	f(r)
	return nil
}

// StopOnSignal waits for SIGINT or SIGTERM, kills every process of the
// trial Run is running, and exits with code 130. Call it in a goroutine.
func StopOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	<-ch
	fmt.Fprintln(os.Stderr, "interrupted: stopping every node")
	currentMu.Lock()
	r := current
	currentMu.Unlock()
	if r != nil {
		r.cleanup()
	}
	os.Exit(130)
}

var (
	currentMu sync.Mutex
	current   *trial // the trial Run is running, for StopOnSignal
)

// trial is the testing.TB of Run. The embedded nil TB is never used.
type trial struct {
	testing.TB
	name     string
	mu       sync.Mutex // guards cleanups, failed, dirs
	cleanups []func()
	failed   bool
	dirs     []string
}

type trialFatal struct{ msg string }

// cleanup runs the cleanups once, newest first, and removes the temporary
// directories.
func (r *trial) cleanup() {
	r.mu.Lock()
	cs, dirs := r.cleanups, r.dirs
	r.cleanups, r.dirs = nil, nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

func (r *trial) Helper()      {}
func (r *trial) Name() string { return r.name }
func (r *trial) Failed() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *trial) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}
func (r *trial) TempDir() string {
	d, err := os.MkdirTemp("", "otopcua-bench-")
	if err != nil {
		r.Fatal(err)
	}
	r.mu.Lock()
	r.dirs = append(r.dirs, d)
	r.mu.Unlock()
	return d
}
func (r *trial) Logf(format string, args ...any) { log.Printf(format, args...) }
func (r *trial) Log(args ...any)                 { log.Print(args...) }
func (r *trial) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	log.Printf(format, args...)
}
func (r *trial) Fatal(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *trial) Fatalf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *trial) fail(msg string) {
	r.mu.Lock()
	r.failed = true
	r.mu.Unlock()
	if len(msg) > 4000 {
		msg = msg[:4000] + "…"
	}
	panic(trialFatal{msg})
}
