package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// loadEnv, when set in this program's environment, makes it a load child
// instead of the harness: "cpu:N" spins N goroutines, "mem:MB" allocates
// and drops MB MiB in cycles. The harness starts its own executable with
// it (the command's binary, or the test binary through TestMain).
const loadEnv = "OTOPCUA_FALSEPOSITIVE_LOAD"

// RunLoadChild runs the load named by loadEnv and never returns; it
// returns false at once when loadEnv is not set.
func RunLoadChild() bool {
	spec := os.Getenv(loadEnv)
	if spec == "" {
		return false
	}
	kind, arg, _ := strings.Cut(spec, ":")
	n, err := strconv.Atoi(arg)
	if err != nil || n <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want cpu:N or mem:MB with N, MB > 0\n", loadEnv, spec)
		os.Exit(2)
	}
	switch kind {
	case "cpu":
		spin(n)
	case "mem":
		churn(n)
	default:
		fmt.Fprintf(os.Stderr, "%s=%q: want cpu:N or mem:MB\n", loadEnv, spec)
		os.Exit(2)
	}
	return true
}

// spin keeps n goroutines busy on n threads, for ever.
func spin(n int) {
	runtime.GOMAXPROCS(n)
	for i := 1; i < n; i++ {
		go busy()
	}
	busy()
}

var sink atomic.Uint64

func busy() {
	x := uint64(1)
	for {
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		sink.Store(x) // keeps the loop from being optimised away
	}
}

// node is a small pointer-carrying object: a heap full of them gives the
// collector something to trace.
type node struct {
	next *node
	pad  [6]uint64
}

// churn allocates mb MiB in 1 MiB blocks and touches every page, builds a
// linked list of small objects of about a tenth of that, holds it all for
// 300 ms, drops it, collects and returns the memory to the OS, and starts
// again: resident memory swings by hundreds of MB and the collector runs
// over and over.
func churn(mb int) {
	for {
		blocks := make([][]byte, mb)
		for i := range blocks {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = byte(i + j)
			}
			blocks[i] = b
		}
		var head *node
		for range mb * (1 << 20) / 10 / 64 {
			head = &node{next: head}
		}
		time.Sleep(300 * time.Millisecond)
		blocks, head = nil, nil
		_, _ = blocks, head
		runtime.GC()
		debug.FreeOSMemory()
		time.Sleep(100 * time.Millisecond)
	}
}

// loadProc is one load child of the harness.
type loadProc struct {
	name string
	cmd  *exec.Cmd
	cpu0 time.Duration

	mu      sync.Mutex
	peakRSS uint64 // mu must be held.
}

// startLoad starts this executable as a load child (spec: loadEnv's
// value); the test's cleanup kills it, and the kernel kills it if the
// harness dies first.
func startLoad(t testing.TB, name, spec string) *loadProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), loadEnv+"="+spec)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	return &loadProc{name: name, cmd: cmd}
}

func (l *loadProc) pid() int { return l.cmd.Process.Pid }

// mark starts the CPU count of the measured window.
func (l *loadProc) mark() { l.cpu0, _ = measure.CPUTime(l.pid()) }

// cpu is the CPU time used since mark.
func (l *loadProc) cpu() time.Duration {
	c, err := measure.CPUTime(l.pid())
	if err != nil {
		return 0
	}
	return c - l.cpu0
}

// sampleRSS records the child's resident memory if it is a new peak.
func (l *loadProc) sampleRSS() {
	r, err := measure.RSS(l.pid())
	if err != nil {
		return
	}
	l.mu.Lock()
	l.peakRSS = max(l.peakRSS, r)
	l.mu.Unlock()
}

func (l *loadProc) peak() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peakRSS
}
