package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/otopcua/otopcua/floating"
	"github.com/vishvananda/netlink"
)

// DefaultProbeTimeout is Config.ProbeTimeout when it is zero.
const DefaultProbeTimeout = 200 * time.Millisecond

// DefaultHold is Config.Hold when it is zero.
const DefaultHold = 3 * time.Second

// Config is one node's linux executor.
type Config struct {
	// Interface is the name of the interface that carries the floating
	// address (Redundancy:FloatingAddress:Interface). Required.
	Interface string
	// Address is the floating address with its prefix length
	// (Redundancy:FloatingAddress:Address). Required. It is added to lo as
	// a host address (/32, /128) and answered for on Interface: it must lie
	// in a subnet the interface already reaches (the node's own address on
	// the same segment), see the package comment.
	Address netip.Prefix
	// Fence persists the last ownership epoch applied. Required.
	Fence *floating.FileFence
	// Self is this node's id (host:port), named by an Observation of kind
	// self.
	Self string
	// Known maps a MAC address to the member that owns it (learnt by the
	// caller from the members' heartbeats). Nil: every MAC that answers is
	// foreign. Called from Observe's goroutine; must not block.
	Known func(mac net.HardwareAddr) (member string, ok bool)
	// ProbeTimeout is how long Observe collects answers to its ARP or
	// neighbour-solicitation probe. Default DefaultProbeTimeout (200 ms).
	ProbeTimeout time.Duration
	// Namespace is the path of the network namespace the interface lives in
	// (e.g. /var/run/netns/NAME). Default "": the process's own namespace,
	// which is what production uses; tests run executors of several
	// "hosts" in one process.
	Namespace string
	// Now stamps Observation.At (display only, never a decision). Default
	// time.Now.
	Now func() time.Time
	// Hold is how long a seize answers for the address before the node's
	// loop first calls Renew: Redundancy:FloatingAddress:HeartbeatTtl.
	// Default DefaultHold (3 s).
	Hold time.Duration
	// Clock is the monotonic clock the hold is judged by (Renew's until
	// and the responder's now). Default time.Now, whose readings carry the
	// monotonic clock. Called from the responder's goroutine too; must not
	// block.
	Clock func() time.Time
}

// Executor is the linux floating.Executor. Its methods are called from one
// goroutine, never concurrently (the node's floating-address loop); Close
// ends it.
type Executor struct {
	cfg   Config
	space space
	nl    *netlink.Handle
	hold  hold
	resp  *responder
	once  sync.Once // Close
}

var _ floating.Executor = (*Executor)(nil)

// New checks cfg, opens the namespace and a netlink handle in it, and
// checks that the interface exists.
func New(cfg Config) (*Executor, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Hold == 0 {
		cfg.Hold = DefaultHold
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	sp, err := openSpace(cfg.Namespace)
	if err != nil {
		return nil, err
	}
	nl, err := sp.handle()
	if err != nil {
		sp.close()
		return nil, fmt.Errorf("floating/linux: netlink: %w", err)
	}
	e := &Executor{cfg: cfg, space: sp, nl: nl}
	if err := e.prepare(); err != nil {
		e.nl.Close()
		e.space.close()
		return nil, err
	}
	e.resp = startResponder(sp, e.iface, cfg.Address.Addr(), &e.hold, cfg.Clock)
	return e, nil
}

// prepare checks that the interface and lo exist and, for IPv4, that the
// kernel will not answer ARP for the address on lo (quietARP).
func (e *Executor) prepare() error {
	if _, err := e.link(); err != nil {
		return err
	}
	if _, err := e.linkNamed(loopback); err != nil {
		return err
	}
	if e.cfg.Address.Addr().Is4() {
		if err := quietARP(e.space, e.cfg.Interface); err != nil {
			return fmt.Errorf("floating/linux: %w", err)
		}
	}
	return nil
}

// iface is the interface as it is now, for the responder.
func (e *Executor) iface() (*net.Interface, error) {
	l, err := e.link()
	if err != nil {
		return nil, err
	}
	return ifaceOf(l), nil
}

func (c Config) check() error {
	var errs []error
	if c.Interface == "" {
		errs = append(errs, errors.New("no interface (Redundancy:FloatingAddress:Interface)"))
	}
	if !c.Address.IsValid() {
		errs = append(errs, errors.New("no address (Redundancy:FloatingAddress:Address)"))
	} else if c.Address.Addr().Zone() != "" || c.Address.Addr().Is4In6() {
		errs = append(errs, fmt.Errorf("address %s: give a plain IPv4 or IPv6 address without a zone", c.Address))
	}
	if c.Fence == nil {
		errs = append(errs, errors.New("no epoch fence"))
	}
	if c.ProbeTimeout < 0 {
		errs = append(errs, fmt.Errorf("probe timeout %s is negative", c.ProbeTimeout))
	}
	if c.Hold < 0 {
		errs = append(errs, fmt.Errorf("hold %s is negative", c.Hold))
	}
	if len(errs) > 0 {
		return fmt.Errorf("floating/linux: %w", errors.Join(errs...))
	}
	return nil
}

// Close stops the responder and releases the netlink handle and the
// namespace. The address stays where it is (on lo, if held), but nobody
// answers for it any more: a node that stops without releasing is silent,
// as a dead one is.
// Closing twice is harmless.
func (e *Executor) Close() {
	e.once.Do(func() {
		e.resp.stop()
		e.nl.Close()
		e.space.close()
	})
}

// Renew extends the hold to until (a reading of Config.Clock, monotonic):
// the node's loop calls it after every successful heartbeat with now +
// HeartbeatTtl. The responder answers for the address only while this
// process holds it and now < until, so a process frozen longer than its
// hold wakes silent and stays so until its loop renews or releases. Renew
// does not make a released address held. Safe to call from any goroutine.
func (e *Executor) Renew(until time.Time) { e.hold.renew(until) }

// Provider is floating.ProviderLinux.
func (e *Executor) Provider() floating.Provider { return floating.ProviderLinux }

// Apply runs p after the fence admits its epoch. The whole plan is checked
// first: a plan older than the last epoch applied is refused with a
// *floating.StaleEpochError, a plan with an unknown op or bad parameters
// with an error, and in both cases nothing is done. The first action that
// fails stops the plan; the error names it.
func (e *Executor) Apply(ctx context.Context, p floating.Plan) error {
	epoch := p.Intent.Epoch
	if last := e.cfg.Fence.Last(); epoch < last {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	steps, err := compile(p, e.cfg.Interface, e.cfg.Address)
	if err != nil {
		return err
	}
	if err := e.cfg.Fence.Admit(epoch); err != nil {
		return err
	}
	for i, s := range steps {
		if err := e.do(ctx, s); err != nil {
			return fmt.Errorf("floating/linux: action %d (%s) of the %s plan at epoch %d: %w", i+1, s.op, p.Intent.Verb, epoch, err)
		}
	}
	return nil
}

func (e *Executor) do(ctx context.Context, s step) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	switch s.op {
	case floating.OpAddrAdd:
		return e.take()
	case floating.OpAddrDel:
		_, err := e.release()
		return err
	case floating.OpAnnounce:
		return e.announce(ctx, s.count, s.interval)
	}
	panic("floating/linux: compile let through op " + s.op)
}

// take is a seize's addr-add: the address on lo first (the kernel accepts
// connections to it), then held with a fresh hold (the responder answers).
func (e *Executor) take() error {
	if err := e.addToLoopback(); err != nil {
		return err
	}
	e.hold.take(e.cfg.Clock().Add(e.cfg.Hold))
	return nil
}

// release is addr-del and RemoveIfPresent: the responder stops answering
// first, then the TCP connections made to the address are reset (their
// clients reconnect at once, to the next holder), then the address leaves
// lo (and the interface, where an older version or a human put it).
func (e *Executor) release() (removed bool, err error) {
	e.hold.drop()
	// Best effort (see resetConnections): a kernel that cannot destroy
	// sockets leaves the clients to their own timeouts, and the address
	// must leave all the same.
	_, _ = e.resetConnections()
	return e.removeEverywhere()
}

// Observe reports who holds the address: this node when it answers for it
// (see Sighting.Present), otherwise whoever answers a probe within
// ProbeTimeout.
func (e *Executor) Observe(ctx context.Context) (floating.Observation, error) {
	s, err := e.Look(ctx)
	return s.Observation, err
}

// Sighting is what Look saw: the Observation, and every MAC that answered
// (an Observation names one holder; two MACs answering is a dual hold the
// caller reports).
type Sighting struct {
	floating.Observation
	// Present: this node answers for the address, so no probe was made:
	// it is on lo and held (seized, not released), or it is on the
	// interface itself (a leftover of an older version, or added by hand),
	// where the kernel answers for it.
	Present bool
	// OnLoopback, OnInterface: where the address is on this node.
	OnLoopback, OnInterface bool
	// Answering: the responder answers for it now (held and the hold
	// current).
	Answering bool
	// MACs answered the probe, in the order of their first answer.
	MACs []net.HardwareAddr
}

// Look is Observe with every MAC that answered.
func (e *Executor) Look(ctx context.Context) (Sighting, error) {
	l, err := e.link()
	if err != nil {
		return Sighting{}, err
	}
	at, err := e.locate(l)
	if err != nil {
		return Sighting{}, err
	}
	hs := e.hold.get()
	if err := e.resp.failure(); err != nil && hs.Holding {
		return Sighting{}, fmt.Errorf("floating/linux: the address is held but its responder is down: %w", err)
	}
	present := (at.lo && hs.Holding) || at.iface
	var macs []net.HardwareAddr
	if !present {
		pctx, cancel := context.WithTimeout(ctx, e.cfg.ProbeTimeout)
		macs, err = probe(pctx, e.space, ifaceOf(l), e.cfg.Address.Addr())
		cancel()
		if err != nil {
			return Sighting{}, err
		}
	}
	obs := classify(present, l.Attrs().HardwareAddr, e.cfg.Self, macs, e.cfg.Known)
	obs.At = e.cfg.Now()
	return Sighting{Observation: obs, Present: present, OnLoopback: at.lo, OnInterface: at.iface,
		Answering: hs.answers(e.cfg.Clock()), MACs: macs}, nil
}

// RemoveIfPresent stops answering for the address and removes it from lo
// and from the interface (a leftover of an older version, which added it
// there), whatever its prefix length; a node calls it at start-up, before
// its OPC UA port opens, so that a leftover of an earlier run never takes
// connections for the address while another member owns it. It is not
// fenced: it only ever gives the address up. removed says whether it was
// anywhere.
func (e *Executor) RemoveIfPresent(ctx context.Context) (removed bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return e.release()
}
