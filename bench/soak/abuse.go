package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// Abuse is the hostile load: one goroutine per abuser, each paced at its
// own rate, each bounded in what it holds, each stopping (and releasing
// everything it holds) when the context of Run ends.
type Abuse struct {
	// Endpoint is the server's opc.tcp URL.
	Endpoint string
	// LocalIP is the address every abuser connects from ("127.0.0.2": a
	// machine other than the well-behaved clients'); "" lets the kernel
	// choose.
	LocalIP string
	// Tally receives every operation and answer.
	Tally *Tally
	// Vars are the numeric ids of namespace-0 Variables, which the
	// subscription abusers monitor in rotation. Required.
	Vars []uint32
	// Items is the size of each abusive subscription; Batch the items per
	// CreateMonitoredItems request.
	Items, Batch int
	// Seed makes the fuzzers' choices repeatable.
	Seed uint64
}

// Bounds and paces of the abusers.
const (
	opTimeout      = 5 * time.Second  // handshakes and small calls
	bigCallTimeout = 60 * time.Second // a CreateMonitoredItems of Batch items
	answerTimeout  = 2 * time.Second  // waiting for the answer to a fuzzed message
	maxHeld        = 40               // silent connections one abuser holds at once
	hostileTimeout = time.Hour        // session timeout a hostile client asks for
)

// abuser is one kind of abuse, run as one operation per `every` (the
// first at once; a tick that comes while an operation runs is dropped).
type abuser struct {
	name  string
	every time.Duration
	// op does one operation; it returns when it is done or ctx ends, and
	// false when it did nothing (it holds as much as it may).
	op func(ctx context.Context, r *rand.Rand) bool
	// stop releases what the abuser holds; nil when it holds nothing.
	stop func()
}

// abusers lists every abuser with its pace.
func (a *Abuse) abusers() []abuser {
	helloSilent := newHolder("conn/hello-silent", a.Tally)
	opnSilent := newHolder("conn/opn-silent", a.Tally)
	churn := &subChurn{abuse: a, name: "subs/churn"}
	orphan := &subOrphan{abuse: a, name: "subs/orphan"}
	return []abuser{
		{name: "conn/open-close", every: 100 * time.Millisecond, op: always(a.openClose)},
		{name: helloSilent.name, every: 200 * time.Millisecond, op: func(ctx context.Context, _ *rand.Rand) bool { return a.silent(ctx, helloSilent, false) }, stop: helloSilent.closeAll},
		{name: opnSilent.name, every: 200 * time.Millisecond, op: func(ctx context.Context, _ *rand.Rand) bool { return a.silent(ctx, opnSilent, true) }, stop: opnSilent.closeAll},
		{name: "session/create-only", every: 500 * time.Millisecond, op: always(a.createOnly)},
		{name: "session/create-activate-close", every: 500 * time.Millisecond, op: always(a.createActivateClose)},
		{name: "session/create-activate-drop", every: time.Second, op: always(a.createActivateDrop)},
		{name: churn.name, every: time.Second, op: always(churn.cycle), stop: churn.close},
		{name: orphan.name, every: 4 * time.Second, op: always(orphan.cycle)},
		{name: "fuzz/random-body", every: 100 * time.Millisecond, op: always(a.fuzzRandomBody)},
		{name: "fuzz/bitflip", every: 100 * time.Millisecond, op: always(a.fuzzBitflip)},
		{name: "fuzz/random-hello", every: 100 * time.Millisecond, op: always(a.fuzzHello)},
		{name: "fuzz/oversized", every: 500 * time.Millisecond, op: always(a.fuzzOversized)},
	}
}

// always adapts an operation that always does something.
func always(op func(context.Context, *rand.Rand)) func(context.Context, *rand.Rand) bool {
	return func(ctx context.Context, r *rand.Rand) bool {
		op(ctx, r)
		return true
	}
}

// Run runs every abuser until ctx ends and returns when all have stopped
// and released what they held.
func (a *Abuse) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for k, ab := range a.abusers() {
		r := rand.New(rand.NewPCG(a.Seed, uint64(k)))
		wg.Go(func() {
			if ab.stop != nil {
				defer ab.stop()
			}
			t := time.NewTicker(ab.every)
			defer t.Stop()
			for ctx.Err() == nil {
				if ab.op(ctx, r) {
					a.Tally.Op(ab.name)
				}
				select {
				case <-ctx.Done():
				case <-t.C:
				}
			}
		})
	}
	wg.Wait()
}
