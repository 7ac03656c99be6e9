package netem

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
)

// listenIn opens a TCP listener inside h's namespace that accepts and
// answers "hi" to every connection, closed when the test ends.
func listenIn(t *testing.T, h *Host, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := h.inNamespace(func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hi"))
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln
}

// dialFrom connects from h's namespace to addr within d and reads the
// greeting.
func dialFrom(h *Host, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := h.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if string(b) != "hi" {
		return fmt.Errorf("got %q", b)
	}
	return nil
}

func TestNetPartitionDropRejectHeal(t *testing.T) {
	n := NewNet(t, "a", "b", "c")
	a, b, c := n.Host("a"), n.Host("b"), n.Host("c")
	listenIn(t, b, b.Addr+":7000")
	target := b.Addr + ":7000"

	if err := dialFrom(a, target, 2*time.Second); err != nil {
		t.Fatalf("a→b before any partition: %v", err)
	}

	// Drop: silence. The connect times out; it is neither refused nor reset.
	n.Partition([]*Host{a}, []*Host{b}, Drop)
	start := time.Now()
	err := dialFrom(a, target, 500*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("a→b under a DROP partition: %v, want a timeout", err)
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Fatalf("a→b under DROP ended after %v, before the timeout", time.Since(start))
	}
	// c is on neither side: it still reaches b.
	if err := dialFrom(c, target, 2*time.Second); err != nil {
		t.Fatalf("c→b while a|b is cut: %v", err)
	}

	n.Heal()
	if err := dialFrom(a, target, 2*time.Second); err != nil {
		t.Fatalf("a→b after heal: %v", err)
	}

	// Reject: the live host answers with a reset, like a dead process.
	n.Partition([]*Host{a}, []*Host{b}, Reject)
	start = time.Now()
	err = dialFrom(a, target, 2*time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a→b under REJECT: %v, want connection refused", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("refusal took %v", d)
	}
	n.Heal()
	if err := dialFrom(a, target, 2*time.Second); err != nil {
		t.Fatalf("a→b after the second heal: %v", err)
	}

	// One-way block: b's packets never reach a, so a's connect (whose
	// SYN-ACK comes from b) times out, while c is unaffected.
	n.Block(b, a, Drop)
	if err := dialFrom(a, target, 500*time.Millisecond); err == nil {
		t.Fatal("a→b with b's packets blocked at a: connected")
	}
	if err := dialFrom(c, target, 2*time.Second); err != nil {
		t.Fatalf("c→b with only b→a blocked: %v", err)
	}
}

// TestNetUnblockHealsOneCutOnly: two cuts in force, a|b and a|c; Unblock
// of a|b both ways heals that one and leaves a|c cut.
func TestNetUnblockHealsOneCutOnly(t *testing.T) {
	n := NewNet(t, "a", "b", "c")
	a, b, c := n.Host("a"), n.Host("b"), n.Host("c")
	listenIn(t, b, b.Addr+":7000")
	listenIn(t, c, c.Addr+":7000")
	n.Partition([]*Host{a}, []*Host{b}, Reject)
	n.Partition([]*Host{a}, []*Host{c}, Drop)
	if err := dialFrom(a, b.Addr+":7000", 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("a→b while cut: %v, want connection refused", err)
	}
	n.Unblock(a, b)
	n.Unblock(b, a)
	if err := dialFrom(a, b.Addr+":7000", 2*time.Second); err != nil {
		t.Fatalf("a→b after Unblock: %v", err)
	}
	if err := dialFrom(a, c.Addr+":7000", 500*time.Millisecond); err == nil {
		t.Fatal("a→c connected: Unblock of a|b healed a|c too")
	}
	n.Heal()
	if err := dialFrom(a, c.Addr+":7000", 2*time.Second); err != nil {
		t.Fatalf("a→c after Heal: %v", err)
	}
}

func TestNetHarnessReachesHostLoopbackOnly(t *testing.T) {
	n := NewNet(t, "a")
	a := n.Host("a")
	var ln net.Listener
	if err := a.inNamespace(func() error {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "inside") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	url := "http://" + ln.Addr().String() + "/"

	resp, err := a.HTTPClient().Get(url)
	if err != nil {
		t.Fatalf("GET %s inside the namespace: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "inside" {
		t.Fatalf("body %q", body)
	}
	// The listener is on the namespace's own loopback, not the machine's:
	// from the harness's namespace the same address is someone else's, or
	// nobody's. (A port picked inside the namespace may happen to be in
	// use outside too, so only a success with our body is a failure.)
	if resp, err := (&http.Client{Timeout: time.Second}).Get(url); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) == "inside" {
			t.Fatal("the namespace's loopback listener answered from the harness's own namespace")
		}
	}
	// The calling thread went back to its own namespace.
	own, _ := os.Readlink("/proc/thread-self/ns/net")
	init, _ := os.Readlink("/proc/self/ns/net")
	if own != init {
		t.Fatalf("thread namespace %s, process namespace %s", own, init)
	}
}

func TestNetWrapRunsInsideAndCleanupRemovesEverything(t *testing.T) {
	var ns string
	var pid int
	t.Run("inner", func(t *testing.T) {
		n := NewNet(t, "a", "b")
		a := n.Host("a")
		ns = a.NS
		cmd := exec.Command(a.Wrap()[0], append(a.Wrap()[1:], "sleep", "300")...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid = cmd.Process.Pid
		go cmd.Wait()
		// ip execs the program: the pid we hold is the program's own, in
		// the host's namespace.
		poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(comm)) != "sleep" {
				return fmt.Errorf("pid %d is %q, not sleep", pid, comm)
			}
			got, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
			var want string
			_ = a.inNamespace(func() error {
				want, _ = os.Readlink("/proc/thread-self/ns/net")
				return nil
			})
			if got == "" || got != want {
				return fmt.Errorf("pid %d in namespace %q, want %q", pid, got, want)
			}
			return nil
		})
		n.Block(a, n.Host("b"), Drop) // left in force: cleanup must cope
	})
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), ns) {
		t.Fatalf("namespace %s left behind:\n%s", ns, out)
	}
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if err := syscall.Kill(pid, 0); err == nil {
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(st), ") Z ") {
				return fmt.Errorf("process %d left running in a removed namespace", pid)
			}
		}
		return nil
	})
}
