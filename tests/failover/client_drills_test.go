package failover

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/tests/clientproc"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

// The client drills: what `otopcua client` does for a SCADA operator when
// the redundant pair changes under it. Each runs the real CLI binary,
// `otopcua client subscribe i=2267 -F url,url --json`, as a child process
// next to the rig's `otopcua host` processes and asserts on the JSON lines
// it prints (tests/clientproc reads them live):
//
//	C1 SIGKILL of the Primary → one failover to the survivor ("lost"
//	   connection), Part 4 failover time between 0 and 5 s, notifications
//	   resume from the survivor and reach 250; the CLI keeps running
//	C2 the Primary's own Config DB path is cut (it publishes 100, not
//	   dead) → no move while both are healthy (250 over 240, longer than
//	   --prefer-hold), then one failover, at once, for the level leaving
//	   the healthy band; healed → back to the Primary after the hold
//	C3 the client starts on the Secondary (the Primary unreachable for it
//	   only) → once the Primary is reachable, one failover after
//	   --prefer-hold (not before, not much later), then no flapping
//	C5 (client_secure_test.go) C1 with --security
//	   Basic256Sha256:SignAndEncrypt: the CLI's events say the secured
//	   policy, each node's certificate is trusted once

// moveWithin bounds a failover for a level that left the healthy band,
// from when the rig's own watcher saw the drop: the client sees the level
// through its watch subscription too, so this is delivery, far below a
// hold-timer move (preferHold).
const moveWithin = preferHold / 2

// holdTolerance is how much earlier than the hold a held move may be
// decided: the instants compared are taken by two processes.
const holdTolerance = 100 * time.Millisecond

// connectedTo waits for the client's connected event, checks that it names
// want, and waits for want's level in a notification.
func connectedTo(t *testing.T, c *clientproc.Proc, want string, level byte) clientproc.Line {
	t.Helper()
	conn := c.WaitFor(30*time.Second, 0, "connected event", isEvent(clientproc.Connected, ""))
	if conn.To.URI != uriOf(want) {
		t.Fatalf("the client connected to %s, want %s: %s", conn.To.URI, uriOf(want), conn)
	}
	c.WaitFor(10*time.Second, conn.Seq, fmt.Sprintf("notification %d from %s", level, want), isNote(uriOf(want), levelIs(level)))
	return conn
}

// onlyEvents checks that the client's events are, in order, of the given
// kinds.
func onlyEvents(c *clientproc.Proc, kinds ...string) error {
	ev := c.Events("")
	got := make([]string, len(ev))
	for i, e := range ev {
		got[i] = e.Type
	}
	if strings.Join(got, ",") != strings.Join(kinds, ",") {
		return fmt.Errorf("client events %v, want %v: %v", got, kinds, ev)
	}
	return nil
}

// notesFromOthers are the notifications after line `after` that did not
// come from server (an ApplicationUri). The first notification from the
// new server may come just before the failover event (the event waits for
// that Publish response), so waits for it start before the action.
func notesFromOthers(c *clientproc.Proc, after clientproc.Line, server string) []clientproc.Line {
	var out []clientproc.Line
	for _, l := range c.Since(after.Seq + 1) {
		if l.Type == clientproc.Notification && l.Server != server {
			out = append(out, l)
		}
	}
	return out
}

// decidedAt is when the client decided an event: "interrupted" (for a
// planned move, the decision), else the line's time.
func decidedAt(l clientproc.Line) time.Time {
	if !l.Interrupted.IsZero() {
		return l.Interrupted
	}
	return l.Time
}

// Client drill C1: SIGKILL of the Primary → the client fails over to the
// survivor and its notifications resume there.
func TestClientDrill01KillPrimary(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	c := clientproc.Start(t, subscribeArgs(r.node("a").Endpoint(), r.node("b").Endpoint())...)
	connectedTo(t, c, p, Primary)
	// The client opens its watch of the Secondary meanwhile, the failure
	// detectors gather heartbeats.
	procs.Holds(t, 3*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected); err != nil {
			return err
		}
		return r.levelsAre(want)
	})

	from := c.Next()
	killed := time.Now() // before the signal: the client may see the break first
	r.node(p).Signal(syscall.SIGKILL)
	fo := c.WaitFor(30*time.Second, from, "failover event", isEvent(clientproc.Failover, ""))
	t.Logf("SIGKILL of the Primary %s → failover event after %v: %s", p, fo.Read.Sub(killed).Round(time.Millisecond), fo)
	if fo.From.URI != uriOf(p) || fo.To.URI != uriOf(s) {
		t.Fatalf("failover from %s to %s, want %s → %s", fo.From.URI, fo.To.URI, uriOf(p), uriOf(s))
	}
	if !strings.Contains(strings.ToLower(fo.Reason), "lost") {
		t.Errorf("failover reason %q does not mention the lost connection", fo.Reason)
	}
	if !fo.HasMs || fo.FailoverMs <= 0 || fo.FailoverMs >= 5000 {
		t.Errorf("failoverMs %v (present %v), want 0 < failoverMs < 5000", fo.FailoverMs, fo.HasMs)
	}
	t.Logf("Part 4 failover time reported by the client: %.1f ms (interrupted %s, resumed %s)",
		fo.FailoverMs, fo.Interrupted.Format("15:04:05.000"), fo.Resumed.Format("15:04:05.000"))

	first := c.WaitFor(10*time.Second, from, "notification from the survivor", isNote(uriOf(s), nil))
	top := c.WaitFor(30*time.Second, from, "250 from the survivor", isNote(uriOf(s), levelIs(Primary)))
	t.Logf("kill → first notification from %s after %v (value %s), → its 250 after %v",
		s, first.Read.Sub(killed).Round(time.Millisecond), first.Value, top.Read.Sub(killed).Round(time.Millisecond))

	// The rig's own watcher of the survivor is another subscription: it may
	// see the 250 a publishing interval after the client.
	r.waitLevels(10*time.Second, map[string]byte{s: Primary})
	procs.Holds(t, 2*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected, clientproc.Failover); err != nil {
			return err
		}
		return r.levelsAre(map[string]byte{s: Primary})
	})
	if o := notesFromOthers(c, fo, uriOf(s)); len(o) > 0 {
		t.Fatalf("after the failover to %s the client printed notifications from elsewhere: %v", s, o)
	}
	r.assertInvariant()
}

// Client drill C2: the Primary degrades without dying (its own path to
// the Config DB is reset, so it publishes 100) → the client stays on it
// while it is healthy, then leaves at once for the Secondary.
func TestClientDrill02PrimaryDegrades(t *testing.T) {
	t.Parallel()
	db := pg.Start(t)
	r := newRig(t, pairSpecs("site", "a", "b")...)
	// Each node reaches the Config DB through its own proxy, so that one
	// node's path can be cut alone (whichever of them becomes Primary).
	dbPath := map[string]*netem.Proxy{}
	for _, n := range []string{"a", "b"} {
		px := netem.NewProxy(t, "127.0.0.1:0", db.Addr())
		dbPath[n] = px
		dsn := strings.Replace(db.DSN(), db.Addr(), px.Addr(), 1)
		r.configure(n, func(cfg map[string]any) {
			cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": dsn}
		})
	}
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	c := clientproc.Start(t, subscribeArgs(r.node("a").Endpoint(), r.node("b").Endpoint())...)
	connectedTo(t, c, p, Primary)

	// 250 over 240 is no reason to move, however long it lasts.
	procs.Holds(t, preferHold+time.Second+500*time.Millisecond, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected); err != nil {
			return err
		}
		return r.levelsAre(want)
	})

	from := c.Next()
	if err := dbPath[p].SetMode(netem.Reset); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	bound := dbProbeEvery + dbProbeTimeout + slack
	drop := r.waitFirst(bound+healthTick+10*time.Second, p, cut, "100", is(100))
	t.Logf("Config DB path of %s reset → %s at 100 after %v", p, p, drop.At.Sub(cut).Round(time.Millisecond))
	fo := c.WaitFor(moveWithin+10*time.Second, from, "failover event", isEvent(clientproc.Failover, ""))
	lag := fo.Time.Sub(drop.At)
	t.Logf("%s at 100 (rig watcher) → client's failover %v later: %s", p, lag.Round(time.Millisecond), fo)
	if fo.From.URI != uriOf(p) || fo.To.URI != uriOf(s) {
		t.Fatalf("failover from %s to %s, want %s → %s", fo.From.URI, fo.To.URI, uriOf(p), uriOf(s))
	}
	if !strings.Contains(strings.ToLower(fo.Reason), "healthy band") {
		t.Errorf("failover reason %q does not name the level leaving the healthy band", fo.Reason)
	}
	if fo.Time.Before(cut) || lag > moveWithin {
		t.Errorf("failover at %s, %v after %s's drop to 100 (cut at %s); want after the cut and within %v of the drop, well before a hold-timer move (%v)",
			fo.Time.Format("15:04:05.000"), lag, p, cut.Format("15:04:05.000"), moveWithin, preferHold)
	}
	if !fo.HasMs || fo.FailoverMs <= 0 {
		t.Errorf("failoverMs %v (present %v), want > 0", fo.FailoverMs, fo.HasMs)
	}
	c.WaitFor(10*time.Second, from, "240 from the Secondary", isNote(uriOf(s), levelIs(Secondary)))
	degraded := map[string]byte{p: 100, s: Secondary}
	procs.Holds(t, 3*time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected, clientproc.Failover); err != nil {
			return err
		}
		return r.levelsAre(degraded)
	})
	if o := notesFromOthers(c, fo, uriOf(s)); len(o) > 0 {
		t.Fatalf("after the failover to %s the client printed notifications from elsewhere: %v", s, o)
	}

	// Healed: the Primary is back at 250 and the client follows it after
	// the hold.
	from = c.Next()
	if err := dbPath[p].SetMode(netem.Pass); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	r.waitLevels(dbProbeEvery+dbProbeTimeout+healthTick+slack+10*time.Second, want)
	t.Logf("Config DB path healed → %v after %v", want, time.Since(healed).Round(time.Millisecond))
	back := c.WaitFor(preferHold+10*time.Second, from, "failover back to the Primary", isEvent(clientproc.Failover, ""))
	if back.From.URI != uriOf(s) || back.To.URI != uriOf(p) || !strings.Contains(strings.ToLower(back.Reason), "held") {
		t.Fatalf("after the heal: %s, want a held move %s → %s", back, uriOf(s), uriOf(p))
	}
	up, _ := r.firstReading(p, healed, is(Primary))
	t.Logf("%s back at 250 → client back on it %v later", p, decidedAt(back).Sub(up.At).Round(time.Millisecond))
	if early := up.At.Add(preferHold - holdTolerance); decidedAt(back).Before(early) {
		t.Errorf("the client moved back at %s, before %s had held 250 for %v (since %s)",
			decidedAt(back).Format("15:04:05.000"), p, preferHold, up.At.Format("15:04:05.000"))
	}
	if err := onlyEvents(c, clientproc.Connected, clientproc.Failover, clientproc.Failover); err != nil {
		t.Fatal(err)
	}
	r.assertInvariant()
}

// Client drill C3: the client starts on the Secondary because the Primary
// is unreachable for it alone (a proxy in Reset in front of the Primary's
// OPC UA port; the rig configures no PeerDiscoveryUrls, so the proxy is
// the client's only way to the Primary) → once the proxy passes, the
// client moves to the Primary after --prefer-hold, once.
func TestClientDrill03StartsOnSecondary(t *testing.T) {
	t.Parallel()
	r := newRig(t, pairSpecs("site", "a", "b")...)
	want := healthyRig(t, r)
	p, s := pairRoles(t, want)
	px := netem.NewProxy(t, "127.0.0.1:0", fmt.Sprintf("127.0.0.1:%d", r.node(p).OpcPort))
	if err := px.SetMode(netem.Reset); err != nil {
		t.Fatal(err)
	}
	c := clientproc.Start(t, subscribeArgs(r.node(s).Endpoint(), "opc.tcp://"+px.Addr())...)
	connectedTo(t, c, s, Secondary)
	if err := onlyEvents(c, clientproc.Connected); err != nil {
		t.Fatal(err)
	}

	from := c.Next()
	if err := px.SetMode(netem.Pass); err != nil {
		t.Fatal(err)
	}
	passed := time.Now()
	// When the client first reached the Primary through the proxy (polled
	// every 10 ms, so up to 10 ms late).
	var reached time.Time
	procs.CheckFor(t, 15*time.Second, 10*time.Millisecond, func() error {
		if px.Stats().Accepted == 0 {
			return fmt.Errorf("the client has not connected through the proxy to %s", p)
		}
		reached = time.Now()
		return nil
	})
	t.Logf("proxy to %s passes → the client connects through it %v later", p, reached.Sub(passed).Round(time.Millisecond))

	latest := passed.Add(preferHold + 5*time.Second)
	fo := c.WaitFor(time.Until(latest)+10*time.Second, from, "failover event", isEvent(clientproc.Failover, ""))
	decided := decidedAt(fo)
	t.Logf("proxy passes → failover decided after %v (connect through the proxy → %v), printed after %v: %s",
		decided.Sub(passed).Round(time.Millisecond), decided.Sub(reached).Round(time.Millisecond), fo.Read.Sub(passed).Round(time.Millisecond), fo)
	if fo.From.URI != uriOf(s) || fo.To.URI != uriOf(p) {
		t.Fatalf("failover from %s to %s, want %s → %s", fo.From.URI, fo.To.URI, uriOf(s), uriOf(p))
	}
	if !strings.Contains(strings.ToLower(fo.Reason), "held") {
		t.Errorf("failover reason %q does not name the hold", fo.Reason)
	}
	if decided.Before(passed.Add(preferHold - holdTolerance)) {
		t.Errorf("the client moved %v after the Primary became reachable, before the hold (%v)", decided.Sub(passed), preferHold)
	}
	if decided.Before(reached.Add(preferHold - holdTolerance - 10*time.Millisecond)) {
		t.Errorf("the client moved %v after it first connected to the Primary, before the hold (%v)", decided.Sub(reached), preferHold)
	}
	if fo.Time.After(latest) {
		t.Errorf("the client moved %v after the Primary became reachable, want within the hold + 5 s (%v)", fo.Time.Sub(passed), preferHold+5*time.Second)
	}
	c.WaitFor(10*time.Second, from, "250 from the Primary", isNote(uriOf(p), levelIs(Primary)))

	// No flapping: it stays on the Primary.
	procs.Holds(t, preferHold+time.Second, 50*time.Millisecond, func() error {
		c.MustLive()
		if err := onlyEvents(c, clientproc.Connected, clientproc.Failover); err != nil {
			return err
		}
		return r.levelsAre(want)
	})
	if o := notesFromOthers(c, fo, uriOf(p)); len(o) > 0 {
		t.Fatalf("after the failover to %s the client printed notifications from elsewhere: %v", p, o)
	}
	r.assertInvariant()
}
