package clientproc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/procs"
)

// Result is one finished `otopcua client` run.
type Result struct {
	Args           []string // after the binary: "client", the command, …
	Stdout, Stderr string
	Code           int // exit code
}

func (r Result) String() string {
	return fmt.Sprintf("otopcua %s\nexit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(r.Args, " "), r.Code, r.Stdout, r.Stderr)
}

// Run runs `otopcua client args…` to completion within total and returns
// its output and exit code; it fails the test when the client still runs
// after total (it is killed) or cannot be started.
func Run(t testing.TB, total time.Duration, args ...string) Result {
	t.Helper()
	bin := procs.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), total)
	defer cancel()
	r := Result{Args: append([]string{"client"}, args...)}
	cmd := exec.CommandContext(ctx, bin, r.Args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r.Stdout, r.Stderr = out.String(), errb.String()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("still running after %v:\n%s", total, r)
	case errors.As(err, &ee):
		r.Code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	return r
}

// Lines parses the run's stdout as `subscribe --json` lines (ReadLines),
// numbered from 0; a line that breaks the contract fails the test.
func (r Result) Lines(t testing.TB) []Line {
	t.Helper()
	var out []Line
	var bad []string
	err := ReadLines(strings.NewReader(r.Stdout), time.Now, func(l Line) {
		l.Seq = len(out)
		out = append(out, l)
	}, func(line string, err error) { bad = append(bad, fmt.Sprintf("%v: %s", err, line)) })
	if err != nil {
		t.Fatalf("read stdout: %v", err)
	}
	if len(bad) > 0 {
		t.Fatalf("%d lines break the JSON contract, first: %s\n%s", len(bad), bad[0], r)
	}
	return out
}

// JSONValues decodes r's stdout as a sequence of JSON values (one object
// per line, or arrays of objects) into a list of T.
func JSONValues[T any](t testing.TB, r Result) []T {
	t.Helper()
	var out []T
	dec := json.NewDecoder(strings.NewReader(r.Stdout))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, r)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) > 0 && raw[0] == '[' {
			var list []T
			if err := json.Unmarshal(raw, &list); err != nil {
				t.Fatalf("decode %s: %v\n%s", raw, err, r)
			}
			out = append(out, list...)
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("decode %s: %v\n%s", raw, err, r)
		}
		out = append(out, v)
	}
}
