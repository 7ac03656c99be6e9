//go:build linux

package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"
)

type exitNote struct {
	how       string
	restartIn time.Duration
}

func testChild(t *testing.T, argv ...string) (*child, chan int, chan exitNote) {
	starts, exits := make(chan int, 8), make(chan exitNote, 8)
	c := &child{
		name: "x", argv: argv, dir: t.TempDir(), env: os.Environ(),
		logPath:      filepath.Join(t.TempDir(), "x.log"),
		restartAfter: 100 * time.Millisecond, maxBackoff: time.Second, grace: 500 * time.Millisecond,
		onStart: func(pid int) { starts <- pid },
		onExit:  func(how string, in time.Duration) { exits <- exitNote{how, in} },
	}
	return c, starts, exits
}

func recv[T any](t *testing.T, ch chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
		panic("unreachable")
	}
}

// groupMembers lists the live processes (zombies excluded: they have
// ended and wait only for their parent to collect them) whose process
// group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		// f[0] state, f[1] ppid, f[2] pgrp
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

func TestChildRestartsAfterKillAndStopsCleanly(t *testing.T) {
	c, starts, exits := testChild(t, "/bin/sh", "-c", "trap '' TERM; sleep 60 & wait")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()

	first := recv(t, starts, "start")
	if c.PID() != first {
		t.Fatalf("PID() = %d, want %d", c.PID(), first)
	}
	if pid, err := c.signal(sigKill); err != nil || pid != first {
		t.Fatalf("signal: %d %v", pid, err)
	}
	if e := recv(t, exits, "exit after SIGKILL"); e.how != "killed by SIGKILL" || e.restartIn != 100*time.Millisecond {
		t.Fatalf("exit after SIGKILL: %+v", e)
	}
	second := recv(t, starts, "restart")
	if second == first {
		t.Fatalf("restart kept pid %d", first)
	}
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if m := groupMembers(t, first); len(m) != 0 {
			return fmt.Errorf("processes of the killed group %d remain: %v", first, m)
		}
		return nil
	})

	// The shell ignores SIGTERM: stopping must end with SIGKILL to the
	// whole group (the shell and its sleep) within the grace period.
	// The shell starts its sleep only after installing the trap: once the
	// group has two members, SIGTERM is ignored.
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, poll.True(
		fmt.Sprintf("the restarted shell (group %d) starts its sleep", second),
		func() bool { return len(groupMembers(t, second)) >= 2 }))
	cancel()
	if e := recv(t, exits, "exit after stop"); e.restartIn != 0 || e.how != "killed by SIGKILL" {
		t.Fatalf("exit after stop: %+v", e)
	}
	recv(t, done, "end of run")
	// The group's SIGKILL reaches the sleep asynchronously: it is gone (or
	// a zombie) moments after the shell was reaped.
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if m := groupMembers(t, second); len(m) != 0 {
			return fmt.Errorf("processes of group %d remain after stop: %v", second, m)
		}
		return nil
	})
	select {
	case pid := <-starts:
		t.Fatalf("started again (pid %d) after stop", pid)
	default:
	}
}

func TestChildBackoffDoublesOnQuickExits(t *testing.T) {
	c, starts, exits := testChild(t, "/bin/false")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()
	var got []time.Duration
	for range 3 {
		recv(t, starts, "start")
		e := recv(t, exits, "exit")
		if e.how != "exit code 1" {
			t.Fatalf("exit %+v", e)
		}
		got = append(got, e.restartIn)
	}
	cancel()
	recv(t, done, "end of run")
	if got[0] != 100*time.Millisecond || got[1] != 200*time.Millisecond || got[2] != 400*time.Millisecond {
		t.Fatalf("back-offs %v, want 100ms 200ms 400ms", got)
	}
}
