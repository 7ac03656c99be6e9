package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/otopcua/otopcua/floating"
	"github.com/vishvananda/netlink"
)

// DefaultProbeTimeout is Config.ProbeTimeout when it is zero.
const DefaultProbeTimeout = 200 * time.Millisecond

// Config is one node's linux executor.
type Config struct {
	// Interface is the name of the interface that carries the floating
	// address (Redundancy:FloatingAddress:Interface). Required.
	Interface string
	// Address is the floating address with its prefix length
	// (Redundancy:FloatingAddress:Address). Required. It is added with this
	// prefix length and without a prefix route: it must lie in a subnet the
	// interface already reaches (the node's own address on the same
	// segment), see the package comment.
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
}

// Executor is the linux floating.Executor. Its methods are called from one
// goroutine, never concurrently (the node's floating-address loop); Close
// ends it.
type Executor struct {
	cfg   Config
	space space
	nl    *netlink.Handle
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
	if _, err := e.link(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
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
	if len(errs) > 0 {
		return fmt.Errorf("floating/linux: %w", errors.Join(errs...))
	}
	return nil
}

// Close releases the netlink handle and the namespace.
func (e *Executor) Close() {
	e.nl.Close()
	e.space.close()
}

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
		return e.addAddr()
	case floating.OpAddrDel:
		_, err := e.delAddr()
		return err
	case floating.OpAnnounce:
		return e.announce(ctx, s.count, s.interval)
	}
	panic("floating/linux: compile let through op " + s.op)
}

// Observe reports who holds the address: this node when it is on the
// interface, otherwise whoever answers a probe within ProbeTimeout.
func (e *Executor) Observe(ctx context.Context) (floating.Observation, error) {
	s, err := e.Look(ctx)
	return s.Observation, err
}

// Sighting is what Look saw: the Observation, and every MAC that answered
// (an Observation names one holder; two MACs answering is a dual hold the
// caller reports).
type Sighting struct {
	floating.Observation
	// Present: the address is on this node's interface (no probe was made).
	Present bool
	// MACs answered the probe, in the order of their first answer.
	MACs []net.HardwareAddr
}

// Look is Observe with every MAC that answered.
func (e *Executor) Look(ctx context.Context) (Sighting, error) {
	l, err := e.link()
	if err != nil {
		return Sighting{}, err
	}
	present, err := e.present(l)
	if err != nil {
		return Sighting{}, err
	}
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
	return Sighting{Observation: obs, Present: present, MACs: macs}, nil
}

// RemoveIfPresent removes the address from the interface if it is there,
// whatever its prefix length; a node calls it at start-up, before its OPC
// UA port opens, so that a leftover of an earlier run never answers for
// the address while another member owns it. It is not fenced: it only
// ever gives the address up. removed says whether it was there.
func (e *Executor) RemoveIfPresent(ctx context.Context) (removed bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	return e.delAddr()
}
