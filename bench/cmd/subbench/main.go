// Command subbench runs the subscription benchmark matrix: for every
// implementation and item count it starts a benchserver process, runs
// subload against it, stops the server, and finally prints a Markdown table
// and otopcua's goal check (see bench/README.md).
//
//	go run ./bench/cmd/subbench -impls gopcua,otopcua -items 1000,10000,50000
//
// Every step has a deadline; a server that does not start, hangs or dies
// gives a FAILED row, never a hung benchmark.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/otopcua/otopcua/bench/internal/report"
	"github.com/otopcua/otopcua/bench/internal/subload"
)

type options struct {
	impls     []string
	items     []int
	update    time.Duration
	warmup    time.Duration
	measure   time.Duration
	inflight  int
	repeat    int
	binDir    string
	jsonOut   string
	readyWait time.Duration
	pause     time.Duration
	extra     []string // passed to subload
}

func main() {
	var o options
	impls := flag.String("impls", "gopcua,otopcua", "comma-separated implementations")
	items := flag.String("items", "1000,10000,50000", "comma-separated item counts")
	flag.DurationVar(&o.update, "update", 100*time.Millisecond, "server update interval of every variable")
	flag.DurationVar(&o.warmup, "warmup", 5*time.Second, "warm-up before each measured window")
	flag.DurationVar(&o.measure, "measure", 20*time.Second, "measured window of each run")
	flag.IntVar(&o.inflight, "inflight", 10, "Publish requests kept in flight")
	flag.IntVar(&o.repeat, "repeat", 1, "runs per implementation and item count")
	flag.StringVar(&o.binDir, "bin", "", "directory with benchserver and subload binaries (empty: build them with go build)")
	flag.StringVar(&o.jsonOut, "json", "", "also write every result as a JSON line to this file")
	flag.DurationVar(&o.readyWait, "ready-timeout", 2*time.Minute, "how long a server may take to print its endpoint")
	flag.DurationVar(&o.pause, "pause", 2*time.Second, "pause between runs")
	subArgs := flag.String("subload-args", "", "extra space-separated flags for subload")
	flag.Parse()
	o.impls = strings.Split(*impls, ",")
	for _, s := range strings.Split(*items, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("-items: %q is not a positive number", s)
		}
		o.items = append(o.items, n)
	}
	if *subArgs != "" {
		o.extra = strings.Fields(*subArgs)
	}
	if err := run(o); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "subbench: "+format+"\n", args...)
	os.Exit(2)
}

func run(o options) error {
	if o.binDir == "" {
		dir, err := os.MkdirTemp("", "subbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if err := build(dir); err != nil {
			return err
		}
		o.binDir = dir
	}
	var jsonOut io.Writer
	if o.jsonOut != "" {
		f, err := os.OpenFile(o.jsonOut, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		jsonOut = f
	}
	var results []subload.Result
	first := true
	for _, n := range o.items {
		for _, impl := range o.impls {
			for range o.repeat {
				if !first {
					time.Sleep(o.pause)
				}
				first = false
				fmt.Fprintf(os.Stderr, "subbench: %s with %d items …\n", impl, n)
				r := runOne(o, impl, n)
				fmt.Fprintln(os.Stderr, "  ", r.Human())
				results = append(results, r)
				if jsonOut != nil {
					b, _ := json.Marshal(r)
					fmt.Fprintln(jsonOut, string(b))
				}
			}
		}
	}
	fmt.Printf("\nSubscription throughput: one subscription, publishing %v, every variable updated every %v, sampling %v, queue 1, %d Publish requests in flight; %v warm-up, %v measured.\n\n",
		100*time.Millisecond, o.update, 100*time.Millisecond, o.inflight, o.warmup, o.measure)
	report.Table(os.Stdout, results)
	if lines := report.Check(results, report.DefaultGoals); len(lines) > 0 {
		fmt.Println()
		for _, l := range lines {
			fmt.Println("- " + l)
		}
	}
	return nil
}

// build compiles benchserver and subload into dir.
func build(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator),
		"github.com/otopcua/otopcua/bench/cmd/benchserver",
		"github.com/otopcua/otopcua/bench/cmd/subload")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build: %w", err)
	}
	return nil
}

// runOne measures one implementation at one item count; failures come back
// as a Result with OK false.
func runOne(o options, impl string, items int) subload.Result {
	fail := func(err error) subload.Result {
		return subload.Result{Impl: impl, Items: items, Error: err.Error()}
	}
	cfg, err := subload.Config{
		URL: "opc.tcp://placeholder", Items: items, Warmup: o.warmup, Measure: o.measure, InFlight: o.inflight,
	}.Defaults()
	if err != nil {
		return fail(err)
	}
	maxRun := o.readyWait + cfg.Deadline() + time.Minute

	srv, err := startServer(o, impl, items, maxRun)
	if err != nil {
		return fail(err)
	}
	defer srv.stop()

	ctx, cancel := context.WithTimeout(context.Background(), cfg.Deadline()+20*time.Second)
	defer cancel()
	args := []string{
		"-url", srv.url, "-impl", impl, "-items", strconv.Itoa(items),
		"-ns", srv.ns, "-first", srv.first, "-rounds-id", srv.rounds,
		"-warmup", o.warmup.String(), "-measure", o.measure.String(),
		"-inflight", strconv.Itoa(o.inflight), "-update", o.update.String(),
		"-server-pid", strconv.Itoa(srv.cmd.Process.Pid),
	}
	cmd := exec.CommandContext(ctx, filepath.Join(o.binDir, "subload"), append(args, o.extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	res, perr := lastJSON(out.Bytes())
	if perr != nil {
		return fail(fmt.Errorf("subload gave no result (%v, %v): %s", runErr, perr, tail(errb.String()+srv.stderrTail())))
	}
	if loop := srv.stop(); lateRounds(loop) > 0 || (loop != "" && !res.OK) {
		res.Warnings = append(res.Warnings, "server update "+loop)
	}
	return res
}

// lateRounds is the late= count of a benchserver "loop" line (0 if none).
func lateRounds(loop string) int {
	for _, f := range strings.Fields(loop) {
		if v, ok := strings.CutPrefix(f, "late="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}

func lastJSON(out []byte) (subload.Result, error) {
	var res subload.Result
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if bytes.HasPrefix(lines[i], []byte("{")) {
			return res, json.Unmarshal(lines[i], &res)
		}
	}
	return res, errors.New("no JSON line")
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// server is a running benchserver process.
type server struct {
	cmd                    *exec.Cmd
	url, ns, first, rounds string
	lines                  chan string
	exited                 chan struct{}
	stderr                 *lockedBuffer
	stopOnce               sync.Once
	loop                   string
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (s *server) stderrTail() string { return tail(s.stderr.String()) }

func startServer(o options, impl string, items int, maxRun time.Duration) (*server, error) {
	cmd := exec.Command(filepath.Join(o.binDir, "benchserver"),
		"-impl", impl, "-items", strconv.Itoa(items), "-update", o.update.String(),
		"-addr", "127.0.0.1:0", "-max-run", maxRun.String())
	// An io.Pipe, not StdoutPipe: Wait then returns only after everything
	// the process printed (its final "loop" line included) has been read.
	stdout, pw := io.Pipe()
	cmd.Stdout = pw
	s := &server{cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{}), stderr: &lockedBuffer{}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start benchserver: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() {
		cmd.Wait()
		pw.Close()
		close(s.exited)
	}()
	timeout := time.After(o.readyWait)
	for s.url == "" || s.ns == "" {
		select {
		case l, ok := <-s.lines:
			if !ok {
				<-s.exited
				return nil, fmt.Errorf("benchserver -impl=%s exited before serving: %s", impl, s.stderrTail())
			}
			s.parse(l)
		case <-timeout:
			s.stop()
			return nil, fmt.Errorf("benchserver -impl=%s printed no endpoint within %v: %s", impl, o.readyWait, s.stderrTail())
		}
	}
	return s, nil
}

// parse reads the "listening" and "nodes" lines of benchserver.
func (s *server) parse(l string) {
	if u, ok := strings.CutPrefix(l, "listening "); ok {
		s.url = strings.TrimSpace(u)
		return
	}
	if rest, ok := strings.CutPrefix(l, "nodes "); ok {
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "ns":
				s.ns = v
			case "first":
				s.first = v
			case "rounds":
				s.rounds = v
			}
		}
	}
}

// stop ends the server (SIGTERM, then SIGKILL after 10 s) and returns its
// "loop …" statistics line when it printed one.
func (s *server) stop() string {
	s.stopOnce.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		for l := range s.lines {
			if strings.HasPrefix(l, "loop ") {
				s.loop = l
			}
		}
	})
	return s.loop
}
