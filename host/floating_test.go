package host

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/redundancy"
)

// The floating address's loop on two runtimes in one process: a shared
// SQLite Config DB (the real heartbeat stream), a simulated network with
// one holder, membership views the test edits. The executors check the
// caller's duties as they apply: a take must find this node's claim
// already stored on the stream.

const (
	fInterval  = 40 * time.Millisecond
	fTTL       = 120 * time.Millisecond
	fHold      = 80 * time.Millisecond
	fReconcile = 150 * time.Millisecond
	fCluster   = "site"
)

// floatNet is the simulated network: who holds the address.
type floatNet struct {
	mu     sync.Mutex
	holder string // "", a node id, or "foreign:ID"
	takes  []string
	errs   []string
}

func (n *floatNet) get() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.holder
}

func (n *floatNet) set(h string) {
	n.mu.Lock()
	n.holder = h
	n.mu.Unlock()
}

// floatExec is one node's executor on floatNet.
type floatExec struct {
	self  string
	net   *floatNet
	db    *configdb.DB
	fence *floating.FileFence
}

func (e *floatExec) Provider() floating.Provider { return floating.ProviderLinux }

func (e *floatExec) Apply(ctx context.Context, p floating.Plan) error {
	if err := e.fence.Admit(p.Intent.Epoch); err != nil {
		return err
	}
	e.net.mu.Lock()
	defer e.net.mu.Unlock()
	switch p.Intent.Verb {
	case floating.VerbSeize, floating.VerbReassign:
		rows, err := e.db.FloatingHeartbeats(ctx, fCluster)
		if err != nil {
			return err
		}
		claimed := false
		for _, r := range rows {
			claimed = claimed || (r.Node == e.self && r.Claims)
		}
		if !claimed {
			e.net.errs = append(e.net.errs, e.self+" took the address before its claim was on the stream")
		}
		e.net.holder = e.self
		e.net.takes = append(e.net.takes, fmt.Sprintf("%s %s epoch %d", e.self, p.Intent.Verb, p.Intent.Epoch))
	case floating.VerbRelease:
		if e.net.holder == e.self {
			e.net.holder = ""
		}
	}
	return nil
}

func (e *floatExec) Observe(context.Context) (floating.Observation, error) {
	h := e.net.get()
	switch {
	case h == "":
		return floating.Observation{Kind: floating.HolderNone}, nil
	case h == e.self:
		return floating.Observation{Kind: floating.HolderSelf, Member: e.self, ID: "mac-" + e.self}, nil
	case len(h) > 8 && h[:8] == "foreign:":
		return floating.Observation{Kind: floating.HolderForeign, ID: h[8:]}, nil
	}
	return floating.Observation{Kind: floating.HolderMember, Member: h, ID: "mac-" + h}, nil
}

// floatMembers is a membership view the test edits.
type floatMembers struct {
	self membership.UniqueAddress
	all  *atomic.Pointer[[]membership.Member]
}

func (m floatMembers) Self() membership.UniqueAddress { return m.self }
func (m floatMembers) Snapshot() membership.State {
	return membership.State{Gossip: membership.NewGossip(*m.all.Load()...), Self: m.self}
}
func (m floatMembers) Subscribe(func(membership.Event)) (membership.State, func()) {
	return m.Snapshot(), func() {}
}

type floatNode struct {
	id       string
	addr     membership.UniqueAddress
	ln       net.Listener // the "cluster port": closed when the process dies
	view     *redundancy.RoleView
	draining atomic.Bool
	level    atomic.Int32
	rt       *floatingRuntime
}

type floatWorld struct {
	t     *testing.T
	db    *configdb.DB
	net   *floatNet
	all   atomic.Pointer[[]membership.Member]
	nodes map[string]*floatNode
}

func newFloatWorld(t *testing.T) *floatWorld {
	t.Helper()
	db, err := configdb.Open(context.Background(), configdb.ProviderSQLite, "file:"+filepath.Join(t.TempDir(), "cfg.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := &floatWorld{t: t, db: db, net: &floatNet{}, nodes: map[string]*floatNode{}}
	var ms []membership.Member
	for i, name := range []string{"a", "b"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		port := ln.Addr().(*net.TCPAddr).Port
		addr := membership.UniqueAddress{Host: "127.0.0.1", Port: port, UID: uint64(i + 1)}
		m := membership.NewMember(addr, []string{redundancy.RoleDriver}, fCluster)
		m.Status, m.UpNumber = membership.Up, i+1
		ms = append(ms, m)
		w.nodes[name] = &floatNode{id: "127.0.0.1:" + strconv.Itoa(port), addr: addr, ln: ln}
	}
	w.all.Store(&ms)
	return w
}

// start runs name's loop, Primary or Secondary at epoch.
func (w *floatWorld) start(name string, role redundancy.Role, epoch uint64) *floatNode {
	n := w.nodes[name]
	n.view = redundancy.NewRoleView(floatMembers{self: n.addr, all: &w.all}, fCluster)
	n.view.SetRole(role, epoch)
	n.level.Store(250)
	fence, err := floating.OpenFileFence(filepath.Join(w.t.TempDir(), "epoch"))
	if err != nil {
		w.t.Fatal(err)
	}
	n.rt = newFloatingRuntime(floatingOptions{
		ClusterID: fCluster, Self: n.id, Address: netip.MustParsePrefix("10.0.0.100/24"),
		Params:   floating.Params{AutoFailover: true, HeartbeatTTL: fTTL, PromotionHold: fHold},
		Interval: fInterval, Reconcile: fReconcile,
		Target: floating.Target{Provider: floating.ProviderLinux, Interface: "eth0", AnnounceCount: 1, AnnounceInterval: time.Millisecond},
		Exec:   &floatExec{self: n.id, net: w.net, db: w.db, fence: fence}, HolderID: "mac-" + n.id,
		DB: w.db, Members: floatMembers{self: n.addr, all: &w.all}.Snapshot, View: n.view,
		Level:    func() (byte, bool) { return byte(n.level.Load()), true },
		Draining: n.draining.Load, Clock: clockwork.NewRealClock(), Metrics: nopFloatingMetrics{},
		Log: slog.New(slog.DiscardHandler), DialTimeout: 100 * time.Millisecond,
	})
	n.rt.start()
	w.t.Cleanup(func() {
		if n.rt.stop != nil {
			n.rt.stop()
			<-n.rt.done
		}
	})
	return n
}

// crash stops name's loop without a release and closes its cluster port.
func (w *floatWorld) crash(name string) {
	n := w.nodes[name]
	n.rt.stop()
	<-n.rt.done
	n.ln.Close()
}

// freeze stops name's loop without a release; its cluster port stays open.
func (w *floatWorld) freeze(name string) {
	n := w.nodes[name]
	n.rt.stop()
	<-n.rt.done
}

// remove drops name from the membership view.
func (w *floatWorld) remove(name string) {
	var keep []membership.Member
	for _, m := range *w.all.Load() {
		if m.Address != w.nodes[name].addr {
			keep = append(keep, m)
		}
	}
	w.all.Store(&keep)
}

func (w *floatWorld) waitHolder(name string, within time.Duration) {
	w.t.Helper()
	want := ""
	if name != "" {
		want = w.nodes[name].id
	}
	poll.CheckFor(w.t, within, 5*time.Millisecond, func() error {
		if h := w.net.get(); h != want {
			return fmt.Errorf("holder %q, want %q", h, want)
		}
		return nil
	})
}

func (w *floatWorld) noErrors() {
	w.t.Helper()
	w.net.mu.Lock()
	defer w.net.mu.Unlock()
	for _, e := range w.net.errs {
		w.t.Error(e)
	}
}

type nopFloatingMetrics struct{}

func (nopFloatingMetrics) FloatingOwned(bool)    {}
func (nopFloatingMetrics) FloatingSeize()        {}
func (nopFloatingMetrics) FloatingDrift(string)  {}
func (nopFloatingMetrics) FloatingConflict(bool) {}

func TestFloatingPrimaryTakesTheAddressWithItsClaimStored(t *testing.T) {
	w := newFloatWorld(t)
	w.start("a", redundancy.RolePrimary, 1)
	w.start("b", redundancy.RoleSecondary, 1)
	w.waitHolder("a", 5*time.Second)
	poll.Holds(t, 5*fInterval, 5*time.Millisecond, func() error {
		if h := w.net.get(); h != w.nodes["a"].id {
			return fmt.Errorf("holder moved to %q", h)
		}
		return nil
	})
	st := w.nodes["b"].rt.status()
	if st.Owner != w.nodes["a"].id || st.Holds {
		t.Fatalf("b's report: owner %q holds %v", st.Owner, st.Holds)
	}
	w.noErrors()
}

func TestFloatingCrashedHolderIsReplacedAtOnce(t *testing.T) {
	w := newFloatWorld(t)
	w.start("a", redundancy.RolePrimary, 1)
	b := w.start("b", redundancy.RoleSecondary, 1)
	w.waitHolder("a", 5*time.Second)
	w.crash("a")
	w.remove("a")
	start := time.Now()
	b.view.SetRole(redundancy.RolePrimary, 2)
	// Gone (the cluster port refuses): no wait for the heartbeat to go stale.
	w.waitHolder("b", fTTL+fHold+time.Second)
	t.Logf("reassigned %v after the role change", time.Since(start))
	w.noErrors()
}

func TestFloatingFrozenHolderKeepsTheAddressUntilStaleOnTheStream(t *testing.T) {
	w := newFloatWorld(t)
	w.start("a", redundancy.RolePrimary, 1)
	b := w.start("b", redundancy.RoleSecondary, 1)
	w.waitHolder("a", 5*time.Second)
	w.freeze("a") // no heartbeat any more; its port still answers
	w.remove("a")
	b.view.SetRole(redundancy.RolePrimary, 2)
	// Within TTL + hold of the last heartbeat b must wait…
	poll.Holds(t, fTTL/2, 5*time.Millisecond, func() error {
		if h := w.net.get(); h != w.nodes["a"].id {
			return fmt.Errorf("holder %q before a went stale on the stream", h)
		}
		return nil
	})
	// …then it takes it.
	w.waitHolder("b", 5*time.Second)
	w.noErrors()
}

func TestFloatingPlannedHandOverMovesBeforeThePrimaryLeaves(t *testing.T) {
	w := newFloatWorld(t)
	a := w.start("a", redundancy.RolePrimary, 1)
	w.start("b", redundancy.RoleSecondary, 1)
	w.waitHolder("a", 5*time.Second)
	a.draining.Store(true)
	a.level.Store(0)
	// a is still Primary and still a member: b takes the address from it.
	w.waitHolder("b", 5*time.Second)
	if a.view.Role() != redundancy.RolePrimary {
		t.Fatal("a stopped being Primary before the hand-over")
	}
	w.noErrors()
}

func TestFloatingReconcileRepairsDriftAndNeverFightsAForeignHolder(t *testing.T) {
	w := newFloatWorld(t)
	w.start("a", redundancy.RolePrimary, 1)
	w.start("b", redundancy.RoleSecondary, 1)
	w.waitHolder("a", 5*time.Second)
	w.net.set("") // removed by hand from the owner
	w.waitHolder("a", 5*time.Second)
	w.net.set("foreign:02:00:00:00:00:ff")
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if st := w.nodes["a"].rt.status(); !st.Conflict {
			return fmt.Errorf("a's report: conflict %v drift %q", st.Conflict, st.Drift)
		}
		return nil
	})
	poll.Holds(t, 2*fReconcile, 5*time.Millisecond, func() error {
		if h := w.net.get(); h != "foreign:02:00:00:00:00:ff" {
			return fmt.Errorf("the foreign holder was fought: holder %q", h)
		}
		return nil
	})
	w.noErrors()
}
