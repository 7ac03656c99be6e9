package singleton

import (
	"maps"
	"slices"
	"strings"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Phase is where a manager stands with its singleton (Akka's
// ClusterSingletonManager states).
type Phase uint8

// Phases. Running is true in Oldest, WasOldest, HandingOver and Stopping:
// the instance has been started and its Stop has not returned yet.
const (
	// Younger: another member should run the singleton (or none can).
	Younger Phase = iota
	// BecomingOldest: this node should run it, and waits for the
	// HandOverDone (or the removal) of every member that may still run it.
	BecomingOldest
	// Oldest: the instance runs here.
	Oldest
	// WasOldest: the instance runs here, a newer placement exists; this
	// node offered TakeOverFromMe and waits for HandOverToMe.
	WasOldest
	// HandingOver: the instance is stopping for a hand-over.
	HandingOver
	// Stopping: the instance is stopping for good (this node was downed
	// or removed, or the manager is closing).
	Stopping
	// Ended: the manager runs nothing and never will.
	Ended
)

var phaseNames = [...]string{"Younger", "BecomingOldest", "Oldest", "WasOldest", "HandingOver", "Stopping", "Ended"}

func (p Phase) String() string {
	if int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "Phase(?)"
}

// Running reports whether the instance may be running in phase p.
func (p Phase) Running() bool {
	return p == Oldest || p == WasOldest || p == HandingOver || p == Stopping
}

// Why an instance starts.
const (
	startFirst    = "oldest"    // no previous holder known
	startHandOver = "hand-over" // the previous oldest confirmed it stopped
	startTakeOver = "take-over" // the previous oldest is gone without a word
)

// Effects of the machine, carried out in order by the manager.
type (
	effect interface{ isEffect() }
	// startInstance: create and start the instance.
	startInstance struct {
		how      string // startFirst, startHandOver or startTakeOver
		detail   string
		previous membership.UniqueAddress
	}
	// stopInstance: stop the instance, then step instanceStopped.
	stopInstance struct{ why string }
	// sendSignal: a hand-over message to another node's manager.
	sendSignal struct {
		to  membership.UniqueAddress
		sig wire.SingletonSignal
	}
	// handedOver: the instance stopped for a hand-over to to (zero: to
	// nobody, the node is leaving and no other member has the role).
	handedOver struct{ to membership.UniqueAddress }
	// ended: the manager ended; why says what happened.
	ended struct{ why string }
	// stillWaiting: the hand-over timeout passed while the previous
	// oldest is still a live member.
	stillWaiting struct {
		previous membership.UniqueAddress
		verdict  Previous
	}
)

func (startInstance) isEffect() {}
func (stopInstance) isEffect()  {}
func (sendSignal) isEffect()    {}
func (handedOver) isEffect()    {}
func (ended) isEffect()         {}
func (stillWaiting) isEffect()  {}

// Signals, by their hand-over names.
const (
	HandOverToMe       = wire.SingletonSignal_SINGLETON_SIGNAL_HAND_OVER_TO_ME
	HandOverInProgress = wire.SingletonSignal_SINGLETON_SIGNAL_HAND_OVER_IN_PROGRESS
	HandOverDone       = wire.SingletonSignal_SINGLETON_SIGNAL_HAND_OVER_DONE
	TakeOverFromMe     = wire.SingletonSignal_SINGLETON_SIGNAL_TAKE_OVER_FROM_ME
)

// machineConfig configures a machine.
type machineConfig struct {
	self membership.UniqueAddress
	role string
	// handOverTicks: ticks a new oldest waits for HandOverDone from a
	// previous oldest that is Down but still reachable.
	handOverTicks int
	// takeOverTicks: ticks an oldest that is not leaving keeps offering
	// TakeOverFromMe before it stops its instance anyway.
	takeOverTicks int
	// exitTicks: ticks a leaving oldest waits for HandOverToMe before it
	// stops its instance anyway.
	exitTicks int
}

// machine is the singleton manager's decision core (Akka's
// ClusterSingletonManager FSM), pure: views, hand-over messages, ticks
// and instance stops in; effects out. It reads no clock (timeouts count
// ticks) and performs no I/O. Safety rule: it starts the instance only
// when this node is the Placement and every member that may still run it
// (the previous oldest, any older member that is Exiting or Down, any
// member that offered TakeOverFromMe) has confirmed its stop
// (HandOverDone), was removed, or is Down and unreachable (or Down and
// silent for handOverTicks).
type machine struct {
	cfg       machineConfig
	phase     Phase
	view      membership.State
	wasMember bool
	exiting   bool
	// prev: the last other placement seen (Younger).
	prev membership.UniqueAddress
	// waiting: in BecomingOldest, the members that may still run the
	// instance and have neither confirmed its stop nor gone; confirmed
	// and gone record how the others left the set.
	waiting   map[membership.UniqueAddress]bool
	confirmed map[membership.UniqueAddress]bool
	gone      []membership.UniqueAddress
	// next: in WasOldest the new oldest; in HandingOver and Stopping the
	// receiver of HandOverDone once stopped (zero: nobody).
	next  membership.UniqueAddress
	ticks int
	why   string // Stopping: the reason
	out   []effect
}

func newMachine(cfg machineConfig) *machine { return &machine{cfg: cfg} }

func (m *machine) emit(e effect) { m.out = append(m.out, e) }

func (m *machine) flush() []effect {
	out := m.out
	m.out = nil
	return out
}

func (m *machine) send(to membership.UniqueAddress, sig wire.SingletonSignal) {
	if !to.IsZero() && to != m.cfg.self {
		m.emit(sendSignal{to, sig})
	}
}

// placement is who should run the singleton in the current view; a
// leaving node never counts itself.
func (m *machine) placement() (membership.UniqueAddress, bool) {
	var except membership.UniqueAddress
	if m.exiting || m.selfLeaving() {
		except = m.cfg.self
	}
	p, ok := placementExcept(m.view, m.cfg.role, except)
	return p.Address, ok
}

// selfLeaving reports whether this node's own member has started leaving
// (Leaving or later): once it handed the singleton over it must not take it
// back, even while its view still shows it as the oldest.
func (m *machine) selfLeaving() bool {
	self, ok := m.view.SelfMember()
	return ok && self.Status != membership.Up && self.Status != membership.Joining && self.Status != membership.WeaklyUp
}

func (m *machine) isPlacement() bool {
	p, ok := m.placement()
	return ok && p == m.cfg.self
}

// onView takes a new membership view.
func (m *machine) onView(st membership.State) []effect {
	m.view = st
	self, member := st.SelfMember()
	if member {
		m.wasMember = true
	}
	switch {
	case member && self.Status == membership.Down:
		m.end("this node was downed")
	case m.wasMember && !member && !st.Gossip.IsEmpty():
		m.end("this node was removed")
	default:
		m.reconsider()
	}
	return m.flush()
}

// reconsider re-evaluates the phase against the view.
func (m *machine) reconsider() {
	p, ok := m.placement()
	mine := ok && p == m.cfg.self
	switch m.phase {
	case Younger:
		if mine {
			m.becomeOldest()
		} else if ok {
			m.prev = p
		}
	case BecomingOldest:
		if !mine {
			m.phase, m.ticks, m.waiting = Younger, 0, nil
			if ok {
				m.prev = p
			}
			return
		}
		m.addCandidates()
		m.settle(false)
	case Oldest:
		if !mine {
			m.offer(p, ok)
		}
	case WasOldest:
		switch {
		case mine:
			m.phase, m.next, m.ticks = Oldest, membership.UniqueAddress{}, 0 // the newer placement went away before taking over
		case !ok:
			m.handOver(membership.UniqueAddress{})
		case p != m.next:
			m.offer(p, ok)
		}
	}
}

func previousState(st membership.State, u membership.UniqueAddress) string {
	if mb, ok := st.Gossip.Member(u); ok {
		return mb.Status.String()
	}
	return "removed"
}

// becomeOldest: this node is the placement while Younger. It waits for
// every member that may still run the instance (see candidates).
func (m *machine) becomeOldest() {
	m.phase, m.ticks = BecomingOldest, 0
	m.waiting, m.confirmed, m.gone = map[membership.UniqueAddress]bool{}, map[membership.UniqueAddress]bool{}, nil
	if !m.prev.IsZero() && !m.view.Gossip.HasMember(m.prev) {
		m.gone = append(m.gone, m.prev) // the last placement seen vanished
	}
	m.addCandidates()
	m.settle(false)
	if m.phase == BecomingOldest {
		for _, u := range m.waitingSorted() {
			m.send(u, HandOverToMe)
		}
	}
}

// addCandidates adds to waiting the members that may still run the
// instance: the last other placement seen, if still a member, and every
// member with the role older than this node that is Exiting or Down
// (a node that became the placement without seeing who ran it before
// does not know which of them did). Members that confirmed or are gone
// stay out.
func (m *machine) addCandidates() {
	add := func(u membership.UniqueAddress) {
		if u.IsZero() || u == m.cfg.self || m.confirmed[u] || slices.Contains(m.gone, u) || !m.view.Gossip.HasMember(u) {
			return
		}
		m.waiting[u] = true
	}
	add(m.prev)
	for _, u := range formerHolders(m.view, m.cfg.role) {
		add(u)
	}
}

func (m *machine) waitingSorted() []membership.UniqueAddress {
	return slices.SortedFunc(maps.Keys(m.waiting), membership.UniqueAddress.Compare)
}

// settle drops from waiting the members that are gone (timedOut: also
// those Down but still reachable) and starts the instance once nobody is
// left to wait for.
func (m *machine) settle(timedOut bool) {
	for _, u := range m.waitingSorted() {
		switch JudgePrevious(m.view, u) {
		case PreviousGone:
			delete(m.waiting, u)
			m.gone = append(m.gone, u)
		case PreviousGoneAfterTimeout:
			if timedOut {
				delete(m.waiting, u)
				m.gone = append(m.gone, u)
			}
		}
	}
	if len(m.waiting) > 0 {
		return
	}
	switch {
	case len(m.gone) > 0:
		var parts []string
		for _, u := range m.gone {
			parts = append(parts, u.String()+" "+previousState(m.view, u))
		}
		detail := "previous oldest gone without a hand-over: " + strings.Join(parts, ", ")
		if timedOut {
			detail += " (hand-over timeout)"
		}
		m.start(startTakeOver, detail, m.gone[0])
	case len(m.confirmed) > 0:
		m.start(startHandOver, "", slices.MinFunc(slices.Collect(maps.Keys(m.confirmed)), membership.UniqueAddress.Compare))
	default:
		m.start(startFirst, "", membership.UniqueAddress{})
	}
}

func (m *machine) start(how, detail string, prev membership.UniqueAddress) {
	m.phase, m.ticks, m.next = Oldest, 0, membership.UniqueAddress{}
	m.waiting, m.confirmed, m.gone = nil, nil, nil
	m.emit(startInstance{how: how, detail: detail, previous: prev})
}

// offer: a newer placement exists (or none) while the instance runs.
func (m *machine) offer(p membership.UniqueAddress, ok bool) {
	if !ok {
		m.handOver(membership.UniqueAddress{})
		return
	}
	m.phase, m.next, m.ticks = WasOldest, p, 0
	m.send(p, TakeOverFromMe)
}

// handOver stops the instance; HandOverDone goes to to once it stopped.
func (m *machine) handOver(to membership.UniqueAddress) {
	m.phase, m.next, m.ticks = HandingOver, to, 0
	m.send(to, HandOverInProgress)
	m.emit(stopInstance{why: "hand-over"})
}

// end stops the manager for good.
func (m *machine) end(why string) {
	switch m.phase {
	case Oldest, WasOldest:
		// in WasOldest, next (the new oldest) gets HandOverDone too
		m.phase, m.why = Stopping, why
		m.emit(stopInstance{why: why})
	case HandingOver:
		m.phase, m.why = Stopping, why // the stop under way ends it
	case Stopping, Ended:
	default:
		m.phase = Ended
		m.emit(ended{why: why})
	}
}

// onReceive takes a hand-over message from another node's manager.
func (m *machine) onReceive(from membership.UniqueAddress, sig wire.SingletonSignal) []effect {
	if from == m.cfg.self {
		return nil
	}
	switch sig {
	case HandOverToMe:
		m.onHandOverToMe(from)
	case HandOverInProgress:
		if m.phase == BecomingOldest && m.waiting[from] {
			m.ticks = 0 // it is stopping; give it a full timeout again
		}
	case HandOverDone:
		if m.phase == BecomingOldest && m.waiting[from] {
			delete(m.waiting, from)
			m.confirmed[from] = true
			m.settle(false)
		}
	case TakeOverFromMe:
		switch {
		case m.phase == BecomingOldest && m.view.Gossip.HasMember(from) && !slices.Contains(m.gone, from):
			// it says it runs the instance: wait for it too
			if !m.confirmed[from] {
				m.waiting[from] = true
			}
			m.send(from, HandOverToMe)
		case m.phase == Oldest && m.view.Gossip.HasMember(from):
			m.send(from, HandOverToMe) // already running here: tell it to stop
		}
	}
	return m.flush()
}

func (m *machine) onHandOverToMe(from membership.UniqueAddress) {
	switch m.phase {
	case Oldest, WasOldest:
		if m.view.Gossip.HasMember(from) {
			m.handOver(from)
		}
	case HandingOver, Stopping:
		if m.next.IsZero() {
			m.next = from
		}
		if from == m.next {
			m.send(from, HandOverInProgress)
		}
	case Younger, Ended:
		m.send(from, HandOverDone) // nothing runs here
	}
}

// onTick runs the retries and timeouts (one tick per retry interval).
func (m *machine) onTick() []effect {
	switch m.phase {
	case BecomingOldest:
		m.ticks++
		for _, u := range m.waitingSorted() {
			m.send(u, HandOverToMe)
		}
		m.settle(m.ticks >= m.cfg.handOverTicks)
		if m.phase == BecomingOldest && m.ticks%m.cfg.handOverTicks == 0 {
			for _, u := range m.waitingSorted() {
				m.emit(stillWaiting{previous: u, verdict: JudgePrevious(m.view, u)})
			}
		}
	case WasOldest:
		m.ticks++
		limit := m.cfg.takeOverTicks
		if m.exiting {
			limit = m.cfg.exitTicks
		}
		if m.ticks >= limit {
			m.handOver(m.next) // never asked: stop anyway and tell it
		} else {
			m.send(m.next, TakeOverFromMe)
		}
	}
	return m.flush()
}

// onStopped: the instance's Stop returned.
func (m *machine) onStopped() []effect {
	switch m.phase {
	case HandingOver:
		m.send(m.next, HandOverDone)
		m.emit(handedOver{to: m.next})
		m.phase, m.ticks = Younger, 0
		if !m.next.IsZero() {
			m.prev = m.next
		}
		m.next = membership.UniqueAddress{}
		m.reconsider()
	case Stopping:
		m.send(m.next, HandOverDone)
		m.phase = Ended
		m.emit(ended{why: m.why})
	}
	return m.flush()
}

// onLeaving: this node is leaving (its exit task runs). It never starts
// the instance again, and hands a running one over.
func (m *machine) onLeaving() []effect {
	m.exiting = true
	m.reconsider()
	return m.flush()
}

// onSelfRemoved: this node's membership ended.
func (m *machine) onSelfRemoved() []effect {
	m.end("this node left the cluster")
	return m.flush()
}

// onClose: the manager is stopping.
func (m *machine) onClose() []effect {
	m.end("manager stopped")
	return m.flush()
}
