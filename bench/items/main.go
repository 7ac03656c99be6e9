// Command items measures how fast otopcua's server creates monitored items
// and what they cost: for each case it starts an in-process otopcua server
// (opcua.New on a kernel-picked 127.0.0.1 port) with the variables the case
// needs, connects otopcua's lean client (opcua/uaclient) over loopback TCP,
// creates one subscription and then the case's monitored items (Value
// attribute) in CreateMonitoredItems requests of -batch items, and deletes
// the subscription with DeleteSubscriptions.
//
// Cases (-cases) are layout:items pairs: "one" puts every item on one
// variable, "spread" gives each item its own variable.
//
// Per case it reports creation throughput (items/s), total creation time,
// the first and last request's round trip (a growing one shows a cost per
// item that grows with the items already there), DeleteSubscriptions time,
// and the growth of the live heap (runtime.ReadMemStats after GC) per item.
//
// Each case runs in a child process (this binary with -child), so that a
// case that exceeds -timeout is reported as "> timeout" and its process,
// still busy inside the server, is ended before the next case starts, and
// so that every case starts from a fresh heap.
//
// Usage:
//
//	go run ./bench/items -cases one:10000,one:100000,spread:200000 -batch 10000 -sampling 0 -timeout 180s
//
// It prints a Markdown table and then one JSON line per case.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
)

// defaultCases are the cases of the brief: 10k, 100k and 200k items on one
// variable and spread over as many variables.
const defaultCases = "one:10000,one:100000,one:200000,spread:10000,spread:100000,spread:200000"

// killGrace is how long after its timeout a child may take to report
// before it is killed.
const killGrace = 30 * time.Second

func main() {
	cases := flag.String("cases", defaultCases, "comma-separated layout:items cases; layout one (every item on one variable) or spread (one variable per item)")
	batch := flag.Int("batch", 10000, "items per CreateMonitoredItems request")
	sampling := flag.Duration("sampling", 0, "requested sampling interval of every item (0: every change)")
	timeout := flag.Duration("timeout", 180*time.Second, "time limit of one case (setup, creation, deletion); a case beyond it is reported as > timeout")
	child := flag.String("child", "", "run this one case in this process and print its JSON result (used by the command itself)")
	flag.Parse()

	if *batch < 1 || *timeout <= 0 || *sampling < 0 {
		fmt.Fprintln(os.Stderr, "items: -batch must be ≥ 1, -timeout > 0 and -sampling ≥ 0")
		os.Exit(2)
	}
	p := Params{Batch: *batch, Sampling: *sampling, Timeout: *timeout}
	list, err := ParseCases(*cases)
	if *child != "" {
		list, err = ParseCases(*child)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "items:", err)
		os.Exit(2)
	}
	if *child != "" {
		b, _ := json.Marshal(RunCase(list[0], p))
		fmt.Println(string(b))
		// The server may still be working after a timeout; do not wait
		// for it.
		os.Exit(0)
	}

	fmt.Printf("bench/items, %s\n", measure.Machine(time.Now()))
	fmt.Printf("batch %d, sampling %v, timeout %v per case\n\n", p.Batch, p.Sampling, p.Timeout)
	var results []Result
	for _, c := range list {
		fmt.Fprintf(os.Stderr, "items: case %s …\n", c)
		r := runChild(c, p)
		fmt.Fprintf(os.Stderr, "items: case %s: %s\n", c, createCell(r))
		results = append(results, r)
	}
	Table(os.Stdout, results)
	fmt.Println()
	for _, r := range results {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
	for _, r := range results {
		if r.Error != "" {
			os.Exit(1)
		}
	}
}

// runChild runs c in a child process and returns its result; a child that
// neither reports nor exits within the timeout plus killGrace is killed and
// reported as timed out.
func runChild(c Case, p Params) Result {
	fallback := Result{Bench: "items", Case: c.String(), Layout: c.Layout, Items: c.Items, Batch: p.Batch,
		SamplingMs: ms(p.Sampling), TimeoutS: p.Timeout.Seconds()}
	self, err := os.Executable()
	if err != nil {
		fallback.Error = err.Error()
		return fallback
	}
	cmd := exec.Command(self, "-child", c.String(), "-batch", fmt.Sprint(p.Batch),
		"-sampling", p.Sampling.String(), "-timeout", p.Timeout.String())
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fallback.Error = err.Error()
		return fallback
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(p.Timeout + killGrace)
	defer timer.Stop()
	select {
	case err = <-done:
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		fallback.CreateTimeout = true
		fallback.Error = fmt.Sprintf("the case's process did not report within %v and was killed", p.Timeout+killGrace)
		return fallback
	}
	r, perr := parseChild(&out)
	if perr != nil {
		fallback.Error = fmt.Sprintf("child: %v (exit: %v)", perr, err)
		return fallback
	}
	return r
}

// parseChild reads the child's last JSON line.
func parseChild(r io.Reader) (Result, error) {
	var last string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.HasPrefix(l, "{") {
			last = l
		}
	}
	var res Result
	if last == "" {
		return res, fmt.Errorf("no result line")
	}
	return res, json.Unmarshal([]byte(last), &res)
}
