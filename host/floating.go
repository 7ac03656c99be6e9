package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/gate"
	"github.com/otopcua/otopcua/redundancy"
)

// floatingRuntime moves Redundancy:FloatingAddress to the Primary of this
// node's ClusterId. One goroutine runs it: every HeartbeatInterval (and at
// once when this node's role or epoch changes) it writes this node's
// heartbeat to the Config DB's shared stream, reads the others', asks
// floating.Decide and applies the plan the verb needs; every
// ReconcileInterval it observes who really holds the address and repairs
// drift (floating.Drift). Its state for GET /api/floating is read under mu.
type floatingRuntime struct {
	o    floatingOptions
	poke chan struct{}

	stream *floating.Stream

	mu sync.Mutex // guards st and holds
	st FloatingReport
	// holds: this node holds the address, as its last successful plan or
	// observation left it.
	holds bool

	// leaving: a graceful stop hands the address over (Draining).
	leaving atomic.Bool

	stop context.CancelFunc
	done chan struct{}
}

// healthyBand is the lowest ServiceLevel of Part 4's Healthy band
// (200–255): a member below it is not eligible to hold the address.
const healthyBand = 200

// floatingOptions is what a floatingRuntime reads. Every func must be safe
// for concurrent use and must not block.
type floatingOptions struct {
	ClusterID, Self string
	Address         netip.Prefix
	Params          floating.Params
	Interval        time.Duration // heartbeat
	Reconcile       time.Duration
	Target          floating.Target
	Exec            floating.Executor
	// HolderID is how the executor names this node (its MAC on-prem,
	// its ENI/VNIC/NIC id in the cloud), written into every heartbeat so
	// that the others can recognise it in their observations.
	HolderID string
	DB       *configdb.DB
	Members  func() membership.State
	View     *redundancy.RoleView
	Level    func() (byte, bool)
	Draining func() bool
	Clock    clockwork.Clock
	Metrics  floatingMetrics
	Log      *slog.Logger
	// DialTimeout bounds the probe that tells a dead member (its cluster
	// port refuses connections) from an unreachable one.
	DialTimeout time.Duration
}

// floatingMetrics is where the runtime counts; telemetry implements it.
type floatingMetrics interface {
	FloatingOwned(owned bool)
	FloatingSeize()
	FloatingDrift(kind string)
	FloatingConflict(conflict bool)
}

// FloatingReport is GET /api/floating's body: this node's view of its
// ClusterId's floating address.
type FloatingReport struct {
	ClusterID string    `json:"clusterId"`
	Address   string    `json:"address"`
	Provider  string    `json:"provider"`
	Self      string    `json:"self"`
	Holds     bool      `json:"holds"`
	Owner     string    `json:"owner"`
	Verb      string    `json:"verb"`
	Reason    string    `json:"reason"`
	Epoch     uint64    `json:"epoch"`
	StreamMax time.Time `json:"streamMax"`
	StreamErr string    `json:"streamError,omitempty"`
	// Observed is the last reconcile's observation.
	Observed   *FloatingObserved `json:"observed,omitempty"`
	Drift      string            `json:"drift,omitempty"`
	Conflict   bool              `json:"conflict"`
	LastAction string            `json:"lastAction,omitempty"`
	LastError  string            `json:"lastError,omitempty"`
	Members    []FloatingMember  `json:"members"`
}

// FloatingObserved is what the last reconcile saw holding the address.
type FloatingObserved struct {
	Kind   string    `json:"kind"`
	ID     string    `json:"id,omitempty"`
	Member string    `json:"member,omitempty"`
	At     time.Time `json:"at"`
}

// FloatingMember is one member as the stream shows it: Skew is its
// clock's offset from the Config DB's (its heartbeat's sent time minus the
// time the database stored it; shown, never used in a decision).
type FloatingMember struct {
	Node      string        `json:"node"`
	Primary   bool          `json:"primary"`
	Claims    bool          `json:"claims"`
	Heartbeat time.Time     `json:"heartbeat"`
	Seq       uint64        `json:"seq"`
	HolderID  string        `json:"holderId,omitempty"`
	Skew      time.Duration `json:"skewNanos"`
	Gone      bool          `json:"gone"`
}

func newFloatingRuntime(o floatingOptions) *floatingRuntime {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 300 * time.Millisecond
	}
	return &floatingRuntime{o: o, poke: make(chan struct{}, 1), stream: floating.NewStream(o.ClusterID), done: make(chan struct{}),
		st: FloatingReport{ClusterID: o.ClusterID, Address: o.Address.String(), Provider: string(o.Exec.Provider()), Self: o.Self}}
}

// start runs the loop until stop.
func (r *floatingRuntime) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go r.run(ctx)
	go r.watchRole(ctx)
}

// shutdown stops the loop and, when this node holds the address, releases
// it (a planned leave: the next Primary seizes it as soon as the stream
// shows the release).
func (r *floatingRuntime) shutdown() {
	r.stop()
	<-r.done
	if !r.holding() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.act(ctx, floating.Decision{Verb: floating.VerbRelease, Epoch: r.o.View.Epoch(), Reason: "this node stops"})
}

// handOver marks this node draining and waits (at most timeout) until the
// loop released the address and told the stream.
func (r *floatingRuntime) handOver(timeout time.Duration) {
	r.leaving.Store(true)
	r.pokeNow()
	deadline := time.Now().Add(timeout)
	for r.holding() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *floatingRuntime) pokeNow() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// watchRole pokes the loop as soon as this node's role or epoch changes:
// a crash of the Primary makes this node Primary within a fraction of a
// second, and the address must follow without waiting for the next
// heartbeat.
func (r *floatingRuntime) watchRole(ctx context.Context) {
	role, epoch := r.o.View.Role(), r.o.View.Epoch()
	t := r.o.Clock.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
		}
		if nr, ne := r.o.View.Role(), r.o.View.Epoch(); nr != role || ne != epoch {
			role, epoch = nr, ne
			r.pokeNow()
		}
	}
}

func (r *floatingRuntime) run(ctx context.Context) {
	defer close(r.done)
	beat := r.o.Clock.NewTicker(r.o.Interval)
	defer beat.Stop()
	rec := r.o.Clock.NewTicker(r.o.Reconcile)
	defer rec.Stop()
	// A heartbeat first: the first reconcile then knows the members' MACs
	// from the stream, and does not report a member holding the address
	// as a foreign one (a conflict) for one interval after a restart.
	r.step(ctx)
	r.reconcile(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-beat.Chan():
			r.step(ctx)
		case <-r.poke:
			r.step(ctx)
		case <-rec.Chan():
			r.reconcile(ctx)
			r.step(ctx)
		}
	}
}

func (r *floatingRuntime) holding() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.holds
}

func (r *floatingRuntime) setHolds(h bool) {
	r.mu.Lock()
	r.holds = h
	r.st.Holds = h
	r.mu.Unlock()
	r.o.Metrics.FloatingOwned(h)
}

// step is one heartbeat: write ours, read theirs, decide, act.
func (r *floatingRuntime) step(ctx context.Context) {
	stored := r.heartbeat(ctx, r.holding()) == nil
	v := r.view(ctx)
	d := floating.Decide(v, r.o.Params)
	r.mu.Lock()
	r.st.Owner, r.st.Verb, r.st.Reason, r.st.Epoch, r.st.StreamMax = d.Owner, string(d.Verb), d.Reason, d.Epoch, v.StreamMax
	r.mu.Unlock()
	switch d.Verb {
	case floating.VerbSeize, floating.VerbReassign, floating.VerbRelease:
		r.act(ctx, d)
	case floating.VerbNone:
		r.renew(d, stored)
	}
}

// renew extends the hold of an on-premises address while this node holds
// it, is its owner and its claim is on the stream; a node unfit to hold it
// stops renewing and falls silent when the hold lapses, before any peer
// may take the address for staleness.
func (r *floatingRuntime) renew(d floating.Decision, stored bool) {
	rn, ok := r.o.Exec.(interface{ Renew(until time.Time) })
	if !ok || !stored || d.Owner != r.o.Self || !r.holding() {
		return
	}
	rn.Renew(time.Now().Add(r.o.Params.HeartbeatTTL))
}

// heartbeat writes this node's heartbeat (claims: whether it says it holds
// the address) and feeds every member's last one into the stream. A Config
// DB that does not answer stalls the stream: no member is declared stale
// for lack of observation.
func (r *floatingRuntime) heartbeat(ctx context.Context, claims bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.Interval)
	defer cancel()
	draining, healthy, licensed := r.selfFlags()
	_, err := r.o.DB.PutFloatingHeartbeat(ctx, r.o.ClusterID, configdb.FloatingHeartbeat{
		Node: r.o.Self, EmittedAt: r.o.Clock.Now(), Claims: claims, Epoch: r.o.View.Epoch(), MAC: r.o.HolderID,
		Draining: draining, Healthy: healthy, Licensed: licensed})
	var rows []configdb.FloatingHeartbeat
	if err == nil {
		rows, err = r.o.DB.FloatingHeartbeats(ctx, r.o.ClusterID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.st.StreamErr = err.Error()
		return err
	}
	r.st.StreamErr = ""
	for _, h := range rows {
		r.stream.Observe(floating.Heartbeat{ClusterID: r.o.ClusterID, Node: h.Node, Seq: h.Seq, EmittedAt: h.EmittedAt,
			ObservedAt: h.ObservedAt, Claims: h.Claims, Epoch: h.Epoch, MAC: h.MAC, Draining: h.Draining, Healthy: h.Healthy, Licensed: h.Licensed})
	}
	return nil
}

// view gathers floating.Decide's input: the driver members of this
// ClusterId from the membership view (Primary by the election, this node
// by its RoleView), each with its last heartbeat on the stream.
func (r *floatingRuntime) view(ctx context.Context) floating.View {
	st := r.o.Members()
	in := r.o.View.Input()
	var views []redundancy.MemberView
	present := map[string]bool{}
	for _, m := range st.Gossip.Members {
		if m.ClusterID != r.o.ClusterID || !m.HasRole(redundancy.RoleDriver) {
			continue
		}
		switch m.Status {
		case membership.Joining, membership.WeaklyUp, membership.Up, membership.Leaving:
			present[m.Address.NodeID()] = true
		}
		views = append(views, redundancy.MemberViewOf(m))
	}
	primary, successor := electFloating(views, r.o.ClusterID)
	gone := r.goneClaimers(ctx, present)
	r.mu.Lock()
	defer r.mu.Unlock()
	v := floating.View{Self: r.o.Self, StreamMax: r.stream.Max(), Epoch: in.Epoch}
	nodes := map[string]bool{r.o.Self: true}
	for n := range present {
		nodes[n] = true
	}
	skews := r.stream.Skews()
	for n := range skews {
		nodes[n] = true
	}
	r.st.Members = r.st.Members[:0]
	for n := range nodes {
		m := floating.Member{Node: n}
		h, seen := r.stream.Last(n)
		if n == r.o.Self {
			m.Primary = in.Role == redundancy.RolePrimary
			m.Draining, m.Healthy, m.Licensed = r.selfFlagsLocked(in)
		} else {
			m.Primary = n == primary
			m.Gone = gone[n]
			m.Draining, m.Healthy, m.Licensed = h.Draining, h.Healthy, h.Licensed
		}
		m.Successor = n == successor
		if seen {
			m.Heartbeat, m.Claims = h.ObservedAt, h.Claims
			if m.Claims && n != r.o.Self && v.Holder.Kind == "" {
				v.Holder = floating.Observation{Kind: floating.HolderMember, ID: h.MAC, Member: n}
			}
		}
		v.Members = append(v.Members, m)
		r.st.Members = append(r.st.Members, FloatingMember{Node: n, Primary: m.Primary, Claims: m.Claims, Heartbeat: m.Heartbeat,
			Seq: h.Seq, HolderID: h.MAC, Skew: skews[n], Gone: m.Gone})
	}
	switch {
	case r.holds:
		v.Holder = floating.Observation{Kind: floating.HolderSelf, ID: r.o.HolderID, Member: r.o.Self}
	case v.Holder.Kind == "" && r.st.Observed != nil && r.st.Observed.Kind == string(floating.HolderForeign):
		v.Holder = floating.Observation{Kind: floating.HolderForeign, ID: r.st.Observed.ID}
	case v.Holder.Kind == "":
		v.Holder = floating.Observation{Kind: floating.HolderNone}
	}
	return v
}

// selfFlags are this node's own eligibility inputs: a planned failover,
// drain or leave under way; ServiceLevel in the Healthy band; the licence
// (always under a strategy without one).
func (r *floatingRuntime) selfFlags() (draining, healthy, licensed bool) {
	return r.selfFlagsLocked(r.o.View.Input())
}

func (r *floatingRuntime) selfFlagsLocked(in gate.Input) (draining, healthy, licensed bool) {
	level, ok := r.o.Level()
	return r.o.Draining() || r.leaving.Load(), ok && level >= healthyBand, in.Licence == gate.Licensed
}

// electFloating returns the Primary of clusterID and its successor: the
// member the election picks when the Primary is gone (the Primary a
// planned failover hands the address to).
func electFloating(views []redundancy.MemberView, clusterID string) (primary, successor string) {
	primary = redundancy.Elect(views)[clusterID].Primary
	rest := slices.DeleteFunc(slices.Clone(views), func(m redundancy.MemberView) bool { return m.NodeID == primary })
	return primary, redundancy.Elect(rest)[clusterID].Primary
}

// goneClaimers probes, without holding mu, the members whose last
// heartbeat claims the address but that membership no longer lists: the
// only ones whose death a decision needs (a reassign from a dead holder).
// Rows of members long gone that claim nothing are never dialled.
func (r *floatingRuntime) goneClaimers(ctx context.Context, present map[string]bool) map[string]bool {
	r.mu.Lock()
	var probe []string
	for n := range r.stream.Skews() {
		if h, ok := r.stream.Last(n); ok && h.Claims && n != r.o.Self && !present[n] {
			probe = append(probe, n)
		}
	}
	r.mu.Unlock()
	gone := map[string]bool{}
	for _, n := range probe {
		gone[n] = r.refuses(ctx, n)
	}
	return gone
}

// refuses reports whether node's cluster port refuses connections: the
// process is gone (a live one that is only unreachable times out).
func (r *floatingRuntime) refuses(ctx context.Context, node string) bool {
	d := net.Dialer{Timeout: r.o.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", node)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// act plans and applies d's verb; it reports whether the hold changed. A
// take is preceded by a heartbeat that claims the address, stored by the
// Config DB (no stored claim, no take: a member that sees no claim from a
// live holder may take the address from it, so the claim must be on the
// stream first); a release is followed by one that claims nothing.
func (r *floatingRuntime) act(ctx context.Context, d floating.Decision) bool {
	if d.Verb == floating.VerbRelease {
		d.Epoch = r.releaseEpoch(d.Epoch)
	}
	in := floating.Intent{ClusterID: r.o.ClusterID, Address: r.o.Address, Self: r.o.Self, Owner: d.Owner, Verb: d.Verb,
		From: d.From, Epoch: d.Epoch, Reason: d.Reason}
	take := d.Verb != floating.VerbRelease
	plan, err := floating.PlanFor(in, r.o.Target)
	if err == nil && take {
		if herr := r.heartbeat(ctx, true); herr != nil {
			err = fmt.Errorf("the claim was not stored on the stream, so the address is not taken: %w", herr)
		}
	}
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, r.applyTimeout())
		err = r.o.Exec.Apply(actx, plan)
		cancel()
	}
	r.mu.Lock()
	r.st.LastAction = plan.Description
	r.st.LastError = ""
	if err != nil {
		r.st.LastError = err.Error()
	}
	r.mu.Unlock()
	if err != nil {
		r.o.Log.Warn("floating address: plan failed", "verb", d.Verb, "epoch", d.Epoch, "plan", plan.Description, "error", err)
		return false
	}
	r.o.Log.Info("floating address: "+string(d.Verb), "address", r.o.Address.String(), "epoch", d.Epoch, "reason", d.Reason, "plan", plan.Description)
	if take {
		r.o.Metrics.FloatingSeize()
	}
	r.setHolds(take)
	if !take {
		_ = r.heartbeat(ctx, false) // tell the others at once
	}
	return true
}

// releaseEpoch is the epoch a release carries: the newest of epoch (this
// node's redundancy epoch, 0 once it is no longer a member) and every
// epoch on the stream. A node that held the address, froze and woke up
// downed has a view epoch of 0, below the epoch its fence admitted when it
// seized: its release, made under the epoch it saw then, would be refused
// as stale and the address would stay on its lo. Giving the address up
// under the new owner's epoch, which the stream shows, is admitted.
func (r *floatingRuntime) releaseEpoch(epoch uint64) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.stream.Skews() {
		if h, ok := r.stream.Last(n); ok {
			epoch = max(epoch, h.Epoch)
		}
	}
	return epoch
}

func (r *floatingRuntime) applyTimeout() time.Duration {
	if t := r.o.Target.ConfirmTimeout + 10*time.Second; t > 10*time.Second {
		return t
	}
	return 10 * time.Second
}

// reconcile observes who really holds the address, records it as this
// node's hold and reports drift (missing on the owner, extra on a
// non-owner, a foreign holder); the step that follows repairs it through
// floating.Decide like any other change — the owner seizes an address
// nobody holds, a non-owner releases one it holds, and an address a live
// member still claims is taken only as Decide allows (dead, stale on the
// stream or released), never by the reconcile itself. A foreign holder is
// never fought over.
func (r *floatingRuntime) reconcile(ctx context.Context) {
	octx, cancel := context.WithTimeout(ctx, r.o.Reconcile)
	obs, err := r.o.Exec.Observe(octx)
	cancel()
	if err != nil {
		r.mu.Lock()
		r.st.LastError = "observe: " + err.Error()
		r.mu.Unlock()
		return
	}
	r.setHolds(obs.Kind == floating.HolderSelf)
	r.mu.Lock()
	owner := r.st.Owner
	r.st.Observed = &FloatingObserved{Kind: string(obs.Kind), ID: obs.ID, Member: obs.Member, At: obs.At}
	r.mu.Unlock()
	kind, _ := floating.Drift(owner, r.o.Self, obs)
	r.o.Metrics.FloatingConflict(kind == "conflict")
	r.mu.Lock()
	r.st.Drift, r.st.Conflict = kind, kind == "conflict"
	r.mu.Unlock()
	if kind == "" {
		return
	}
	r.o.Metrics.FloatingDrift(kind)
	r.o.Log.Warn("floating address: drift", "kind", kind, "holder", obs.Kind, "id", obs.ID, "owner", owner)
}

// status is GET /api/floating's body now.
func (r *floatingRuntime) status() FloatingReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.st
	s.Members = append([]FloatingMember(nil), r.st.Members...)
	return s
}

// handler serves GET /api/floating.
func (r *floatingRuntime) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(r.status())
	})
}

// known names the member whose heartbeats carry id (a MAC or a cloud
// resource id); the executor's observations call it.
func (r *floatingRuntime) known(id string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.stream.Skews() {
		if h, ok := r.stream.Last(n); ok && h.MAC != "" && strings.EqualFold(h.MAC, id) {
			return n, true
		}
	}
	return "", false
}

// panel is the admin panel's floating address line for clusterID (nil for
// another ClusterId).
func (r *floatingRuntime) panel(clusterID string) *admin.FloatingPanel {
	if clusterID != r.o.ClusterID {
		return nil
	}
	s := r.status()
	p := &admin.FloatingPanel{Address: s.Address, Owner: s.Owner, Holder: "none", State: "ok"}
	switch {
	case s.Holds:
		p.Holder = s.Self
	case s.Observed != nil && s.Observed.Member != "":
		p.Holder = s.Observed.Member
	case s.Observed != nil && s.Observed.ID != "":
		p.Holder = s.Observed.ID
	}
	for _, m := range s.Members {
		if m.Claims && !s.Holds && m.Node != s.Self {
			p.Holder = m.Node
		}
	}
	switch {
	case s.Conflict:
		p.State = "conflict: a foreign holder"
	case s.Drift != "":
		p.State = "drift: " + s.Drift
	case p.Holder != s.Owner:
		p.State = "moving"
	}
	return p
}
