package gate

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// source is a Source the test sets.
type source struct {
	mu sync.Mutex
	in Input
}

func (s *source) Input() Input {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.in
}

func (s *source) set(in Input) {
	s.mu.Lock()
	s.in = in
	s.mu.Unlock()
}

type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) PrimaryGateDenied(site, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[site+"/"+reason]++
}

func (c *counter) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

func newTestGuard() (*Guard, *source, *counter, *bytes.Buffer) {
	src, cnt, buf := &source{}, &counter{n: map[string]int{}}, &bytes.Buffer{}
	return NewGuard(src, cnt, slog.New(slog.NewTextHandler(buf, nil))), src, cnt, buf
}

// TestGuardCountsEveryDenialAndLogsChanges: a flood of denied writes is
// counted one by one and logged once; the verdict's change is logged; a
// site's log state is its own; Look neither counts nor repeats.
func TestGuardCountsEveryDenialAndLogsChanges(t *testing.T) {
	g, src, cnt, buf := newTestGuard()
	src.set(Input{Role: RoleUnknown, Epoch: 5}) // restarted, not a member yet
	for range 100 {
		if d := g.Check(SiteWrite); d.Allow || d.Reason != DeniedNotMember || d.Epoch != 0 {
			t.Fatalf("not a member: %+v", d)
		}
	}
	if n := cnt.get("write/not-member"); n != 100 {
		t.Fatalf("%d denials counted, want 100", n)
	}
	if n := strings.Count(buf.String(), "primary gate: denied"); n != 1 {
		t.Fatalf("%d denial lines for 100 denied writes, want 1:\n%s", n, buf)
	}
	if !strings.Contains(buf.String(), `reason="not primary (not a cluster member yet)"`) || !strings.Contains(buf.String(), "site=write") {
		t.Fatalf("denial line lacks the site or reason:\n%s", buf)
	}
	// Another site logs its own first verdict; Look does not count.
	g.Look(SiteAlarmEmit)
	g.Look(SiteAlarmEmit)
	if n := strings.Count(buf.String(), "site=alarm-emit"); n != 1 || cnt.get("alarm-emit/not-member") != 0 {
		t.Fatalf("Look: %d lines, %d counted; want 1 line, none counted", n, cnt.get("alarm-emit/not-member"))
	}
	// Joined: a Secondary. The new reason is logged once and counted.
	src.set(Input{Role: RoleSecondary, Member: true, Drivers: 2, Epoch: 6})
	g.Check(SiteWrite)
	g.Check(SiteWrite)
	if cnt.get("write/secondary") != 2 || strings.Count(buf.String(), `label=secondary`) != 1 {
		t.Fatalf("secondary: counted %d, logged %d times", cnt.get("write/secondary"), strings.Count(buf.String(), `label=secondary`))
	}
	// Promoted: serviced with the snapshot's epoch, logged once, not counted.
	src.set(Input{Role: RolePrimary, Member: true, Drivers: 1, Epoch: 9})
	for range 3 {
		if d := g.Check(SiteWrite); !d.Allow || d.Epoch != 9 {
			t.Fatalf("Primary: %+v", d)
		}
	}
	if n := strings.Count(buf.String(), "primary gate: serviced"); n != 1 {
		t.Fatalf("%d serviced lines, want 1:\n%s", n, buf)
	}
	// The licence is an input: a Primary without it is fenced.
	src.set(Input{Role: RolePrimary, Member: true, Drivers: 1, Epoch: 9, Licence: Unlicensed})
	if d := g.Check(SiteHistorianDrain); d.Allow || cnt.get("historian-drain/fenced") != 1 {
		t.Fatalf("unlicensed Primary: %+v, counted %d", d, cnt.get("historian-drain/fenced"))
	}
	if in := g.Input(); in.Licence != Unlicensed || in.Drivers != 1 {
		t.Fatalf("Input() = %+v", in)
	}
}

// TestGuardConcurrent: sites ask from many goroutines at once (-race).
func TestGuardConcurrent(t *testing.T) {
	g, src, cnt, _ := newTestGuard()
	src.set(Input{Role: RoleSecondary, Member: true, Drivers: 2})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				g.Check(Sites()[i%len(Sites())])
			}
		}()
	}
	wg.Wait()
	total := 0
	for _, s := range Sites() {
		total += cnt.get(s.String() + "/secondary")
	}
	if total != 1000 {
		t.Fatalf("%d denials counted, want 1000", total)
	}
}

// TestGuardNilCounterAndLogger: both are optional.
func TestGuardNilCounterAndLogger(t *testing.T) {
	g := NewGuard(&source{in: Input{Role: RoleDetached}}, nil, nil)
	if d := g.Check(SiteAck); d.Allow || d.Reason != DeniedDetached {
		t.Fatalf("%+v", d)
	}
}
