package redundancy

import "time"

// EpochState is the ownership epoch of one application ClusterId and the
// Primary it was issued to.
type EpochState struct {
	// Epoch increases whenever the Primary changes; 0 means the ClusterId
	// never had a Primary in this book.
	Epoch uint64
	// Primary is the NodeId of the Primary, "" when there is none.
	Primary string
	// PrimaryUID is the Primary's incarnation: a restarted process at the
	// same address that becomes Primary again is a change of Primary.
	PrimaryUID uint64
}

// EpochBook holds the epoch of every ClusterId ever seen, by ClusterId.
type EpochBook map[string]EpochState

// NextEpoch is the epoch after prev when the Primary changes at now: one
// more than prev, but never less than now in Unix milliseconds.
//
// The wall-clock floor keeps epochs monotonic where no book survives: a
// whole cluster restarted from nothing issues epochs above every epoch
// issued before (as long as the clock has not gone back by more than the
// time since the last change). The +1 keeps them monotonic where clocks
// disagree: a new singleton seeded with the highest epoch seen on the topic
// never goes below it, whatever its own clock says.
func NextEpoch(prev uint64, now time.Time) uint64 {
	floor := uint64(0)
	if ms := now.UnixMilli(); ms > 0 {
		floor = uint64(ms)
	}
	return max(prev+1, floor)
}

// AdvanceEpochs returns the book after elections at now: every ClusterId
// whose Primary (NodeId or incarnation) differs from the book's gets
// NextEpoch; the others keep theirs. ClusterIds absent from elections keep
// their entry, so a ClusterId that comes back continues above it. book is
// not modified. primaryUID maps a Primary's NodeId to its incarnation.
func AdvanceEpochs(book EpochBook, elections map[string]Election, primaryUID map[string]uint64, now time.Time) EpochBook {
	out := make(EpochBook, len(book)+len(elections))
	for cid, st := range book {
		out[cid] = st
	}
	for cid, e := range elections {
		uid := primaryUID[e.Primary]
		if e.Primary == "" {
			uid = 0
		}
		st, known := out[cid]
		if known && st.Primary == e.Primary && st.PrimaryUID == uid {
			continue
		}
		if st.Epoch == 0 && e.Primary == "" {
			// Never had a Primary and still has none.
			out[cid] = EpochState{}
			continue
		}
		out[cid] = EpochState{Epoch: NextEpoch(st.Epoch, now), Primary: e.Primary, PrimaryUID: uid}
	}
	return out
}

// MergeEpochs folds epochs seen elsewhere (another singleton instance's
// snapshot) into book and returns the result: per ClusterId the higher
// epoch wins. book is not modified.
func MergeEpochs(book, seen EpochBook) EpochBook {
	out := make(EpochBook, len(book)+len(seen))
	for cid, st := range book {
		out[cid] = st
	}
	for cid, st := range seen {
		if cur, ok := out[cid]; !ok || st.Epoch > cur.Epoch {
			out[cid] = st
		}
	}
	return out
}
