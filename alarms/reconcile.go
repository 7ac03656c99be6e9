package alarms

// This file is the pure reconciler of one alarm: no clock (times are
// numbers the caller passes), no I/O.

// MaxPending bounds the pending detections and the credits of one alarm;
// beyond it the oldest are dropped (a Primary that stays silent while this
// node's readings flap cannot grow the lists without end).
const MaxPending = 256

// Outcome is what the reconciler decided about one detection or one
// transition of the Primary.
type Outcome int

const (
	// Publish: a local detection to publish now (this node acts as
	// Primary and the old Primary did not publish it).
	Publish Outcome = iota + 1
	// Hold: a local detection kept pending; the Primary is expected to
	// publish the same transition.
	Hold
	// Matched: a local detection the Primary already published (a credit
	// consumed), or a Primary transition this node had detected (a pending
	// detection consumed).
	Matched
	// Credited: a Primary transition this node has not detected yet.
	Credited
	// Ignored: another node's transition while this node acts as Primary.
	Ignored
)

func (o Outcome) String() string {
	switch o {
	case Publish:
		return "publish"
	case Hold:
		return "hold"
	case Matched:
		return "matched"
	case Credited:
		return "credited"
	case Ignored:
		return "ignored"
	}
	return "unknown"
}

// Reconciler pairs this node's detections of one alarm's active/inactive
// changes with the transitions the Primary published, so that after a
// failover this node publishes exactly the transitions the dead Primary did
// not (when both nodes saw every change).
//
// Both nodes of a pair evaluate the alarm on their own readings of the
// same device, so each sees the same alternating sequence of changes,
// each at its own pace. A detection of this node that the Primary has not
// published yet is pending; a transition of the Primary that this node has
// not detected yet is a credit:
//
//   - Local (a detection with state S): if the oldest credit has state S,
//     it is consumed; if it has the other state, the detection is dropped
//     (the credit is the Primary's change after this one: it published
//     this one too and the message was lost); with no credit, acting as
//     Primary, publish it, else hold it as pending.
//   - Remote (a Primary transition of state S): acting as Primary, ignore
//     it; if it is the first event since Reset and S is the start state,
//     the start state took it in; else the oldest pending detection of state S is consumed with
//     every pending detection before it (the Primary's message for those
//     was lost, or it never saw them); with none, the pending detections
//     are dropped (they precede this change, which the Primary published
//     after them) and it becomes a credit.
//   - Promote (this node became Primary): the pending detections are
//     returned, oldest first, to be published.
//   - Repair (acting as Primary, no credit left): when the last published
//     state is not this node's, it must be published — the end of the
//     cluster's history agrees with the survivor's state.
//
// So at most one of the two lists is non-empty: this node is ahead of the
// Primary (pending) or behind it (credits).
//   - Credits older than TTL are dropped: both nodes poll the same device,
//     so a change the Primary saw that this node has not seen within TTL
//     was too short for this node's polls, and it never will.
//   - Settle (the Primary's periodic state): when the Primary's active
//     state is this node's, pending detections older than TTL are dropped
//     — the Primary, which would have published them within TTL, has them
//     behind it (their message was lost, or the pulse was too short for its
//     polls). While the states differ they stay: the Primary may not read
//     the device, and if it dies they must be published.
//
// Matching goes by state alone, so it cannot tell an even number of
// consecutive lost or missed changes from none: such a run can pair the
// two sides two changes apart. TTL and Settle heal it once the alarm has
// been quiet for TTL.
//
// Times are in any unit the caller chooses, the same as TTL's (the engine
// uses Unix nanoseconds). Not safe for concurrent use.
type Reconciler[P any] struct {
	// TTL is how long a credit waits for its local detection; 0 keeps
	// credits until they are consumed.
	TTL     int64
	pending []held[P]
	credits []credit
	// published is the state of the last active/inactive transition
	// published for the alarm, by the Primary or by this node: the state
	// the cluster's history ends in.
	published bool
	// fresh: nothing happened since Reset.
	fresh bool
}

type held[P any] struct {
	active  bool
	at      int64
	payload P
}

type credit struct {
	active bool
	at     int64
}

// Local decides about a detection of this node. primary is whether this
// node acts as Primary now (the gate's decision, gate.Decide).
func (r *Reconciler[P]) Local(active bool, payload P, primary bool, now int64) Outcome {
	r.expire(now)
	r.fresh = false
	if len(r.credits) > 0 {
		if r.credits[0].active == active {
			r.credits = r.credits[1:]
			return Matched
		}
		// The Primary's next change after this one is credited: it
		// published this one too, and its message was lost.
		return Matched
	}
	if primary {
		r.published = active
		return Publish
	}
	r.pending = append(r.pending, held[P]{active, now, payload})
	if len(r.pending) > MaxPending {
		r.pending = r.pending[1:]
	}
	return Hold
}

// Remote decides about an active or inactive transition published by
// another node.
func (r *Reconciler[P]) Remote(active bool, primary bool, now int64) Outcome {
	r.expire(now)
	if primary {
		return Ignored
	}
	if fresh := r.fresh; fresh {
		r.fresh = false
		if active == r.published {
			// The first transition since Reset is to the start state:
			// the change that state took in (the evaluation came after
			// the change, before the message).
			return Matched
		}
	}
	r.published = active
	for j, h := range r.pending {
		if h.active == active {
			r.pending = r.pending[j+1:]
			return Matched
		}
	}
	// None of this state: the pending detections (at most one, of the
	// other state) come before this change in the Primary's sequence, and
	// it published them.
	r.pending = nil
	r.credits = append(r.credits, credit{active, now})
	if len(r.credits) > MaxPending {
		r.credits = r.credits[1:]
	}
	return Credited
}

// Settle applies the Primary's state snapshot (see Reconciler).
func (r *Reconciler[P]) Settle(primaryActive, localActive bool, now int64) {
	r.expire(now)
	if primaryActive != localActive || r.TTL <= 0 {
		return
	}
	n := 0
	for n < len(r.pending) && now-r.pending[n].at > r.TTL {
		n++
	}
	r.pending = r.pending[n:]
}

// Promote returns the pending detections, oldest first, and forgets them:
// this node became Primary and publishes them.
func (r *Reconciler[P]) Promote() []P {
	if len(r.pending) == 0 {
		return nil
	}
	out := make([]P, len(r.pending))
	for i, h := range r.pending {
		out[i] = h.payload
	}
	r.published = r.pending[len(r.pending)-1].active
	r.pending = nil
	return out
}

// Repair reports whether this node, acting as Primary with no credit
// left, must publish its state local because the last transition published
// says otherwise — after changes it missed or took for the Primary's. The
// caller publishes the state and Repair counts it as published. Call it
// after every Local and periodically (credits expire with time). It never
// fires when both nodes saw every change.
func (r *Reconciler[P]) Repair(local, primary bool, now int64) bool {
	r.expire(now)
	if !primary || len(r.credits) > 0 || len(r.pending) > 0 || r.published == local {
		return false
	}
	r.published = local
	return true
}

// Reset forgets pending detections and credits and takes active as the
// published state (the alarm was redefined, enabled or disabled, or this
// node evaluated it for the first time: both nodes start it afresh).
func (r *Reconciler[P]) Reset(active bool) {
	r.pending, r.credits, r.published, r.fresh = nil, nil, active, true
}

// InSync reports whether this node's detections and the Primary's
// transitions are paired: nothing pending, no credit.
func (r *Reconciler[P]) InSync() bool { return len(r.pending) == 0 && len(r.credits) == 0 }

// Pending and Credits are the list lengths.
func (r *Reconciler[P]) Pending() int { return len(r.pending) }
func (r *Reconciler[P]) Credits() int { return len(r.credits) }

func (r *Reconciler[P]) expire(now int64) {
	if r.TTL <= 0 {
		return
	}
	n := 0
	for n < len(r.credits) && now-r.credits[n].at > r.TTL {
		n++
	}
	r.credits = r.credits[n:]
}
