package host

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/node"
	"github.com/otopcua/otopcua/redundancy"
	"github.com/otopcua/otopcua/redundancy/wire"
)

// Bounds of what the panel watcher keeps.
const (
	// MaxFailoversPerCluster is how many Primary changes are kept per
	// ClusterId (the newest).
	MaxFailoversPerCluster = 20
	// MaxFailoverClusters is how many ClusterIds keep a history; beyond
	// it the ClusterId whose Primary changed least recently is forgotten.
	MaxFailoverClusters = 256
	// MaxWatchedNodes is how many nodes' NodeStatus are kept; beyond it
	// the one heard from least recently is forgotten.
	MaxWatchedNodes = 1024
)

// liveMembers is the live view: every member that is neither Down nor
// Removed, as the election sees them.
func liveMembers(st membership.State) ([]membership.Member, []redundancy.MemberView) {
	var ms []membership.Member
	var views []redundancy.MemberView
	for _, m := range st.Gossip.Members {
		if m.Status == membership.Down || m.Status == membership.Removed {
			continue
		}
		ms = append(ms, m)
		views = append(views, redundancy.MemberViewOf(m))
	}
	return ms, views
}

// unreachableSet is every member some observer holds unreachable (or
// terminated), by incarnation.
func unreachableSet(st membership.State) map[membership.UniqueAddress]bool {
	out := map[membership.UniqueAddress]bool{}
	for _, r := range st.Gossip.Reachability.Records() {
		if r.Status != membership.Reachable {
			out[r.Subject] = true
		}
	}
	return out
}

// panelInput is everything the Live redundancy panel of one ClusterId is
// built from.
type panelInput struct {
	ClusterID string
	// State is this node's membership view.
	State membership.State
	// Epochs are from the latest redundancy snapshot heard.
	Epochs redundancy.EpochBook
	// Infos are the latest NodeStatus of each node, by NodeId.
	Infos     map[string]redundancy.NodeInfo
	Downing   string
	Failovers []admin.FailoverRecord
	Now       time.Time
}

// buildPanel is the pure panel builder: the members of the ClusterId in
// the live view (Up driver members and the others, oldest first), their
// roles and the Primary as redundancy.Elect names them, what each node
// advertised (ServiceLevel, Config DB health, endpoint) when the
// advertisement is from the member's incarnation, reachability, and the
// failover verdict of redundancy.PlanFailover. admin.ErrUnknownCluster
// when no live member has the ClusterId.
func buildPanel(in panelInput) (admin.RedundancyPanel, error) {
	ms, views := liveMembers(in.State)
	el, ok := redundancy.Elect(views)[in.ClusterID]
	if !ok {
		return admin.RedundancyPanel{}, admin.ErrUnknownCluster
	}
	unreachable := unreachableSet(in.State)
	p := admin.RedundancyPanel{
		ClusterID: in.ClusterID, Primary: el.Primary, Downing: in.Downing,
		Epoch: in.Epochs[in.ClusterID].Epoch, Failovers: slices.Clone(in.Failovers), AsOf: in.Now,
	}
	for _, m := range ms {
		if m.ClusterID != in.ClusterID {
			continue
		}
		id := m.Address.NodeID()
		pm := admin.PanelMember{
			NodeID: id, Status: m.Status.String(), UpNumber: m.UpNumber, Roles: slices.Clone(m.Roles),
			Role: el.Roles[id].String(), Reachable: !unreachable[m.Address], ConfigDb: redundancy.ConfigDbUnknown.String(),
			Self: m.Address == in.State.Self,
		}
		if info, ok := in.Infos[id]; ok && info.UID == m.Address.UID {
			pm.ServiceLevel, pm.HasServiceLevel = int(info.ServiceLevel), true
			pm.ApplicationURI, pm.OpcUaEndpoint = info.ApplicationURI, info.OpcUaEndpoint
			pm.ConfigDb = info.ConfigDb.String()
			if info.ConfigDb == redundancy.ConfigDbUnreachable && info.ConfigDbError != "" {
				pm.ConfigDb += ": " + info.ConfigDbError
			}
		}
		p.Members = append(p.Members, pm)
	}
	slices.SortFunc(p.Members, func(a, b admin.PanelMember) int {
		return cmp.Or(cmp.Compare(upOrder(a.UpNumber), upOrder(b.UpNumber)), cmp.Compare(a.NodeID, b.NodeID))
	})
	target, err := redundancy.PlanFailover(views, in.ClusterID)
	if err != nil {
		p.FailoverBlocked = refusalReason(err)
	} else {
		p.FailoverAllowed, p.FailoverTarget = true, target.NodeID
	}
	return p, nil
}

// upOrder sorts members that are not Up yet (NotUp) after the Up ones.
func upOrder(n int) int {
	if n <= 0 || n == membership.NotUp {
		return int(^uint(0) >> 1)
	}
	return n
}

func refusalReason(err error) string {
	if r, ok := err.(*redundancy.FailoverRefusedError); ok {
		return r.Reason
	}
	return err.Error()
}

// buildClusters is the pure overview: every ClusterId of the live view,
// sorted by id.
func buildClusters(st membership.State, epochs redundancy.EpochBook) []admin.ClusterSummary {
	ms, views := liveMembers(st)
	byID := map[string]*admin.ClusterSummary{}
	for _, m := range ms {
		s := byID[m.ClusterID]
		if s == nil {
			s = &admin.ClusterSummary{ClusterID: m.ClusterID, Epoch: epochs[m.ClusterID].Epoch}
			byID[m.ClusterID] = s
		}
		s.Members++
		if m.Status == membership.Up && m.HasRole(redundancy.RoleDriver) {
			s.UpDrivers++
		}
	}
	out := make([]admin.ClusterSummary, 0, len(byID))
	for cid, e := range redundancy.Elect(views) {
		s := byID[cid]
		s.Primary = e.Primary
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClusterID < out[j].ClusterID })
	return out
}

// downingText says which downing strategy the running node applies, in
// the panel's words.
func downingText(nc node.Config) string {
	d := nc.Downing
	ms := func(v int64) string { return (time.Duration(v) * time.Millisecond).String() }
	var s string
	switch d.Strategy {
	case node.AutoDown:
		s = "auto-down: an unreachable member is downed after " + ms(d.AutoDownUnreachableAfter)
	case node.KeepOldest:
		s = "keep-oldest, stable after " + ms(d.StableAfter)
		if d.DownIfAlone {
			s += ", down-if-alone"
		}
	case node.StaticQuorum:
		s = fmt.Sprintf("static-quorum of %d, stable after %s", d.QuorumSize, ms(d.StableAfter))
	case node.KeepMajority, node.LeaseMajority, node.DownAll:
		s = d.Strategy + ", stable after " + ms(d.StableAfter)
	default:
		s = d.Strategy
	}
	if nc.CrashFastPath {
		s += "; a crashed peer (connection refused) is downed at once"
	}
	return s
}

// failoverRing keeps the recent Primary changes per ClusterId, as the
// snapshots' epochs show them: at most MaxFailoversPerCluster records for
// each of at most MaxFailoverClusters ClusterIds. Not safe for concurrent
// use (the panel watcher's mu guards it).
type failoverRing struct {
	last    map[string]redundancy.EpochState
	records map[string][]admin.FailoverRecord // oldest first
	touched map[string]uint64                 // change sequence of the ClusterId's latest record
	seq     uint64
}

func newFailoverRing() *failoverRing {
	return &failoverRing{last: map[string]redundancy.EpochState{}, records: map[string][]admin.FailoverRecord{}, touched: map[string]uint64{}}
}

// observe folds a snapshot's epochs in. An epoch lower than the last one
// seen (a late snapshot of an earlier singleton instance) is ignored.
func (r *failoverRing) observe(epochs redundancy.EpochBook, at time.Time) {
	for _, cid := range slices.Sorted(maps.Keys(epochs)) {
		ep := epochs[cid]
		prev, seen := r.last[cid]
		if seen && ep.Epoch < prev.Epoch {
			continue
		}
		if !seen && len(r.last) >= MaxFailoverClusters {
			r.evict()
		}
		r.last[cid] = ep
		if (!seen && ep.Primary == "") || (seen && ep.Primary == prev.Primary && ep.PrimaryUID == prev.PrimaryUID) {
			continue
		}
		rec := admin.FailoverRecord{At: at, Epoch: ep.Epoch, From: prev.Primary, To: ep.Primary}
		recs := append(r.records[cid], rec)
		if len(recs) > MaxFailoversPerCluster {
			recs = slices.Clone(recs[len(recs)-MaxFailoversPerCluster:])
		}
		r.records[cid] = recs
		r.seq++
		r.touched[cid] = r.seq
	}
}

// evict forgets the ClusterId whose Primary changed least recently (one
// never seen with a Primary first).
func (r *failoverRing) evict() {
	victim, oldest := "", uint64(1<<64-1)
	for cid := range r.last {
		if t := r.touched[cid]; t < oldest || (t == oldest && cid < victim) {
			victim, oldest = cid, t
		}
	}
	delete(r.last, victim)
	delete(r.records, victim)
	delete(r.touched, victim)
}

// of returns the records of cid, newest first.
func (r *failoverRing) of(cid string) []admin.FailoverRecord {
	out := slices.Clone(r.records[cid])
	slices.Reverse(out)
	return out
}

// panelWatcher follows the redundancy topic on every node, driver or not:
// the latest snapshot's epochs, every node's latest NodeStatus (at most
// MaxWatchedNodes) and the failover ring. Handle runs on the mediator's
// goroutine and never blocks; the readers take mu briefly. It is safe for
// concurrent use.
type panelWatcher struct {
	mu     sync.Mutex
	epochs redundancy.EpochBook           // latest snapshot's; mu must be held.
	infos  map[string]redundancy.NodeInfo // mu must be held.
	ring   *failoverRing                  // mu must be held.
	now    func() time.Time
}

func newPanelWatcher(now func() time.Time) *panelWatcher {
	return &panelWatcher{epochs: redundancy.EpochBook{}, infos: map[string]redundancy.NodeInfo{}, ring: newFailoverRing(), now: now}
}

// Handle takes one message of wire.Topic; invalid ones are ignored.
func (w *panelWatcher) Handle(_ membership.UniqueAddress, msg proto.Message) {
	switch m := msg.(type) {
	case *wire.RedundancyStateChanged:
		s, err := redundancy.SnapshotFromWire(m)
		if err != nil {
			return
		}
		at := s.AsOf
		if at.IsZero() {
			at = w.now()
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.epochs = s.Epochs
		w.ring.observe(s.Epochs, at)
	case *wire.NodeStatus:
		i, err := redundancy.NodeInfoFromWire(m)
		if err != nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, had := w.infos[i.NodeID]; !had && len(w.infos) >= MaxWatchedNodes {
			w.forgetStalest()
		}
		w.infos[i.NodeID] = i
	}
}

// forgetStalest drops the NodeStatus with the oldest time. mu must be held.
func (w *panelWatcher) forgetStalest() {
	victim, first := "", true
	var oldest time.Time
	for id, i := range w.infos {
		if first || i.At.Before(oldest) {
			victim, oldest, first = id, i.At, false
		}
	}
	delete(w.infos, victim)
}

// view returns copies of what the panel needs.
func (w *panelWatcher) view(cid string) (redundancy.EpochBook, map[string]redundancy.NodeInfo, []admin.FailoverRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.epochs), maps.Clone(w.infos), w.ring.of(cid)
}
