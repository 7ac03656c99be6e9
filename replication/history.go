package replication

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The process history rides the same service (HistoryPull → HistoryBatch):
// a node back-filling the time it was down asks its peer for one tag's
// samples in a time window, a slice at a time. Same key check, same proof,
// same connection and limits as the LocalDb pulls.

// Protocol limits of the history messages.
const (
	// MaxHistorySamples is the most samples one HistoryBatch carries.
	MaxHistorySamples = 10_000
	// maxTag bounds a tag's name, "device/tag": two deployment names of
	// at most 64 characters and the slash.
	maxTag = 2*64 + 1
	// historySampleBytes is one encoded sample: time, value bits, status.
	historySampleBytes = 8 + 8 + 4
)

// Sample is one recorded value of a tag: its time in OPC UA ticks, the
// value and its status code.
type Sample struct {
	At     int64
	Value  float64
	Status uint32
}

// HistoryPull asks a peer for tag's samples with After < time < Before,
// oldest first, at most Limit of them.
type HistoryPull struct {
	Tag           string
	After, Before int64
	Limit         uint32
}

// HistoryBatch is a peer's answer to a HistoryPull: samples in strictly
// increasing time order; More when the peer holds more of the window
// after the last one.
type HistoryBatch struct {
	Samples []Sample
	More    bool
}

// HistorySource is the process history a node serves to its peers. It is
// called on gRPC's goroutines, concurrently; it must return when ctx
// ends.
type HistorySource interface {
	// HistorySamples returns at most limit of tag's samples with after <
	// time < before, oldest first, and whether there are more.
	HistorySamples(ctx context.Context, tag string, after, before int64, limit int) ([]Sample, bool, error)
}

func (p *HistoryPull) check() error {
	switch {
	case p.Tag == "" || len(p.Tag) > maxTag:
		return fmt.Errorf("%w: tag of %d bytes, accepted 1..%d", ErrMalformed, len(p.Tag), maxTag)
	case p.After >= p.Before:
		return fmt.Errorf("%w: window (%d, %d) is empty", ErrMalformed, p.After, p.Before)
	case p.Limit < 1 || p.Limit > MaxHistorySamples:
		return fmt.Errorf("%w: limit %d, accepted 1..%d", ErrMalformed, p.Limit, MaxHistorySamples)
	}
	for i := 0; i < len(p.Tag); i++ {
		if c := p.Tag[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("%w: tag %q: printable ASCII only", ErrMalformed, p.Tag)
		}
	}
	return nil
}

func (b *HistoryBatch) check() error {
	if len(b.Samples) > MaxHistorySamples {
		return fmt.Errorf("%w: %d samples, at most %d", ErrMalformed, len(b.Samples), MaxHistorySamples)
	}
	for i := 1; i < len(b.Samples); i++ {
		if b.Samples[i].At <= b.Samples[i-1].At {
			return fmt.Errorf("%w: sample %d not after the one before", ErrMalformed, i)
		}
	}
	return nil
}

// history serves one HistoryPull from Options.History.
func (r *Replicator) history(ctx context.Context, p *HistoryPull) (*HistoryBatch, error) {
	if r.opts.History == nil {
		return nil, status.Error(codes.Unimplemented, "this node serves no process history")
	}
	xs, more, err := r.opts.History.HistorySamples(ctx, p.Tag, p.After, p.Before, int(p.Limit))
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	b := &HistoryBatch{Samples: xs, More: more}
	if err := b.check(); err != nil || len(xs) > int(p.Limit) {
		return nil, status.Error(codes.Internal, fmt.Sprintf("history of %s: %d samples for a limit of %d: %v", p.Tag, len(xs), p.Limit, err))
	}
	return b, nil
}

// HistoryPeer is one peer's process history, asked over this
// Replicator's connection to it, with its key and proof.
type HistoryPeer struct {
	r *Replicator
	p *peerState
}

// HistoryPeers are the peers (Options.Peers, in order) as history
// sources; valid after Start, until Stop.
func (r *Replicator) HistoryPeers() []HistoryPeer {
	out := make([]HistoryPeer, 0, len(r.opts.Peers))
	for _, addr := range r.opts.Peers {
		out = append(out, HistoryPeer{r: r, p: r.peers[addr]})
	}
	return out
}

// Name is the peer's address.
func (h HistoryPeer) Name() string { return h.p.addr }

// Samples asks the peer for at most limit (≤ MaxHistorySamples) of tag's
// samples with after < time < before.
func (h HistoryPeer) Samples(ctx context.Context, tag string, after, before int64, limit int) ([]Sample, bool, error) {
	if h.p.conn == nil {
		return nil, false, errors.New("replication: not started")
	}
	in := &HistoryPull{Tag: tag, After: after, Before: before, Limit: uint32(min(limit, MaxHistorySamples))}
	if err := in.check(); err != nil {
		return nil, false, err
	}
	out := new(HistoryBatch)
	if err := h.r.invoke(ctx, h.p, historyMethod, in, out); err != nil {
		return nil, false, err
	}
	return out.Samples, out.More, nil
}
