package main

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/otopcua/otopcua/internal/h2hostile"
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
	// Hardening, when set, adds the abusers of the host's hardening
	// against remote lock-outs, replays and unauthenticated reads, each
	// from its own loopback address (see hardenedAbusers).
	Hardening *Hardening
}

// Hardening is what the hardening abusers aim at beyond the OPC UA
// endpoint.
type Hardening struct {
	// HTTP is the base URL of the host's HTTP port (admin login, reads).
	HTTP string
	// User is an Operator of the host, whose password the abusers guess.
	User string
	// Replication is the host:port of the host's LocalDb sync port.
	Replication string
	// Secure is a client certificate the host trusts, for the secured
	// OpenSecureChannel abusers.
	Secure *SecureClient
}

// The addresses of the hardening abusers: each attack comes from another
// client machine than the well-behaved side's 127.0.0.1.
const (
	passwordIP   = "127.0.0.2" // wrong passwords, OPC UA and admin login
	replayIP     = "127.0.0.3" // the replayed OpenSecureChannel
	renewIP      = "127.0.0.4" // the renew storm
	httpIP       = "127.0.0.5" // unauthenticated reads
	keylessIP    = "127.0.0.7" // keyless replication streams
	holdersPerIP = 5           // never-activated sessions per address of holderIPs
)

// holderIPs are the five addresses holding never-activated sessions.
var holderIPs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"}

// The hardening abusers' names (Verdict reads their counts).
const (
	abuserOPCUAPassword = "auth/opcua-wrong-password"
	abuserAdminPassword = "auth/admin-wrong-password"
	abuserHeld          = "session/unactivated-held"
	abuserReplay        = "opn/replay"
	abuserRenew         = "opn/renew-storm"
	abuserHTTPRead      = "http/read-unauthenticated"
	abuserKeyless       = "repl/keyless-4MiB"
)

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
	list := []abuser{
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
	if a.Hardening != nil {
		list = append(list, a.hardenedAbusers()...)
	}
	return list
}

// hardenedAbusers lists the abusers of the hardening, with their paces.
func (a *Abuse) hardenedAbusers() []abuser {
	held := newHeldSessions(a)
	replay := &replayer{abuse: a}
	streams := &keyless{abuse: a, conns: map[*h2hostile.Client]bool{}}
	adminClient, readClient := httpFrom(passwordIP, false), httpFrom(httpIP, true)
	return []abuser{
		{name: abuserOPCUAPassword, every: 2 * time.Second, op: always(a.wrongPasswordOPCUA)},
		{name: abuserAdminPassword, every: 2 * time.Second, op: always(a.wrongPasswordAdmin(adminClient))},
		{name: abuserHeld, every: 500 * time.Millisecond, op: always(held.round), stop: held.release},
		{name: abuserReplay, every: 100 * time.Millisecond, op: always(replay.replay)},
		{name: abuserRenew, every: 3 * time.Second, op: always(a.renewStorm)},
		{name: abuserHTTPRead, every: 200 * time.Millisecond, op: always(a.unauthenticatedRead(readClient)), stop: readClient.CloseIdleConnections},
		{name: abuserKeyless, every: time.Second, op: streams.open, stop: streams.closeAll},
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
