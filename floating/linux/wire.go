package linux

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"
)

const etherTypeARP = int(ethernet.EtherTypeARP)

var zeroMAC = net.HardwareAddr{0, 0, 0, 0, 0, 0}

// Link names an interface inside a network namespace.
type Link struct {
	// Namespace is the path of the namespace ("" = the process's own).
	Namespace string
	// Interface is the interface's name.
	Interface string
}

// Probe asks the segment of l who holds addr — an ARP probe (who-has, sender
// address 0.0.0.0, so no one's ARP cache learns anything) for IPv4, a
// neighbour solicitation to the address's solicited-node group for IPv6 —
// and returns every MAC that answered before ctx ended (it needs a
// deadline), in the order of their first answer. The probe is sent again
// half-way. A gratuitous announcement of addr seen meanwhile counts as an
// answer. The interface's own MAC is never returned. Probe is for Observe
// and for the drills' samplers, which must see every MAC that answers.
func Probe(ctx context.Context, l Link, addr netip.Addr) ([]net.HardwareAddr, error) {
	sp, err := openSpace(l.Namespace)
	if err != nil {
		return nil, err
	}
	defer sp.close()
	var ifi *net.Interface
	if err := sp.run(func() error {
		var err error
		ifi, err = net.InterfaceByName(l.Interface)
		return err
	}); err != nil {
		return nil, fmt.Errorf("floating/linux: interface %q: %w", l.Interface, err)
	}
	return probe(ctx, sp, ifi, addr)
}

func probe(ctx context.Context, sp space, ifi *net.Interface, addr netip.Addr) ([]net.HardwareAddr, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil, errors.New("floating/linux: a probe needs a deadline")
	}
	if addr.Is4() {
		return probeARP(ctx, sp, ifi, addr, deadline)
	}
	return probeND(ctx, sp, ifi, addr, deadline)
}

// listenARP opens a raw packet socket for ARP on ifi inside sp.
func listenARP(sp space, ifi *net.Interface) (*packet.Conn, error) {
	var c *packet.Conn
	err := sp.run(func() error {
		var err error
		c, err = packet.Listen(ifi, packet.Raw, etherTypeARP, nil)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("floating/linux: ARP socket on %q: %w", ifi.Name, err)
	}
	return c, nil
}

// sendARP broadcasts one ARP packet from ifi.
func sendARP(c *packet.Conn, ifi *net.Interface, op arp.Operation, sip netip.Addr, tha net.HardwareAddr, tip netip.Addr) error {
	return sendARPTo(c, ifi, ethernet.Broadcast, op, sip, tha, tip)
}

// sendARPTo sends one ARP packet from ifi to the MAC dst.
func sendARPTo(c *packet.Conn, ifi *net.Interface, dst net.HardwareAddr, op arp.Operation, sip netip.Addr, tha net.HardwareAddr, tip netip.Addr) error {
	p, err := arp.NewPacket(op, ifi.HardwareAddr, sip, tha, tip)
	if err != nil {
		return err
	}
	pb, err := p.MarshalBinary()
	if err != nil {
		return err
	}
	f := &ethernet.Frame{Destination: dst, Source: ifi.HardwareAddr, EtherType: ethernet.EtherTypeARP, Payload: pb}
	fb, err := f.MarshalBinary()
	if err != nil {
		return err
	}
	_, err = c.WriteTo(fb, &packet.Addr{HardwareAddr: dst})
	return err
}

func probeARP(ctx context.Context, sp space, ifi *net.Interface, addr netip.Addr, deadline time.Time) ([]net.HardwareAddr, error) {
	c, err := listenARP(sp, ifi)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	send := func() error {
		return sendARP(c, ifi, arp.OperationRequest, netip.IPv4Unspecified(), zeroMAC, addr)
	}
	var macs []net.HardwareAddr
	b := make([]byte, max(ifi.MTU, 1500)+18) // Ethernet header and a VLAN tag
	readOne := func() error {
		n, _, err := c.ReadFrom(b)
		if err != nil {
			return err
		}
		var f ethernet.Frame
		var p arp.Packet
		if f.UnmarshalBinary(b[:n]) != nil || f.EtherType != ethernet.EtherTypeARP || p.UnmarshalBinary(f.Payload) != nil {
			return nil
		}
		if p.SenderIP == addr && string(p.SenderHardwareAddr) != string(ifi.HardwareAddr) {
			macs = addMAC(macs, p.SenderHardwareAddr)
		}
		return nil
	}
	err = collect(ctx, c, deadline, send, readOne)
	return macs, err
}

// collect sends, then calls readOne (which reads one packet and keeps what
// it needs of it) until deadline, sending again half-way. ctx ending early
// ends it; neither that nor the deadline is an error.
func collect(ctx context.Context, c interface{ SetReadDeadline(time.Time) error }, deadline time.Time, send, readOne func() error) error {
	stop := context.AfterFunc(ctx, func() { _ = c.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	if err := send(); err != nil {
		return fmt.Errorf("floating/linux: send probe: %w", err)
	}
	resend := time.Now().Add(time.Until(deadline) / 2)
	for ctx.Err() == nil {
		until := deadline
		if !resend.IsZero() {
			until = resend
		}
		if err := c.SetReadDeadline(until); err != nil {
			return err
		}
		err := readOne()
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			if ctx.Err() != nil || resend.IsZero() {
				return nil
			}
			resend = time.Time{}
			if err := send(); err != nil {
				return fmt.Errorf("floating/linux: send probe: %w", err)
			}
		case err != nil:
			return fmt.Errorf("floating/linux: read probe answers: %w", err)
		}
	}
	return nil
}

// listenND opens an NDP connection on ifi inside sp, bound to the
// interface's link-local address. The interface is named by its index: the
// Go runtime resolves zone names through one process-wide cache, which a
// name shared by several namespaces (eth0) would confuse.
func listenND(sp space, ifi *net.Interface) (*ndp.Conn, error) {
	return listenNDAt(sp, ifi, ndp.LinkLocal)
}

// listenNDAt is listenND bound to the address at (ndp.Unspecified: every
// destination, which the responder needs for solicitations sent to the
// floating address itself).
func listenNDAt(sp space, ifi *net.Interface, at ndp.Addr) (*ndp.Conn, error) {
	byIndex := *ifi
	byIndex.Name = strconv.Itoa(ifi.Index)
	var c *ndp.Conn
	err := sp.run(func() error {
		var err error
		c, _, err = ndp.Listen(&byIndex, at)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("floating/linux: NDP socket on %q: %w", ifi.Name, err)
	}
	return c, nil
}

func probeND(ctx context.Context, sp space, ifi *net.Interface, addr netip.Addr, deadline time.Time) ([]net.HardwareAddr, error) {
	c, err := listenND(sp, ifi)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var f ipv6.ICMPFilter
	f.SetAll(true)
	f.Accept(ipv6.ICMPTypeNeighborAdvertisement)
	if err := c.SetICMPFilter(&f); err != nil {
		return nil, err
	}
	group, err := ndp.SolicitedNodeMulticast(addr)
	if err != nil {
		return nil, err
	}
	ns := &ndp.NeighborSolicitation{
		TargetAddress: addr,
		Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Source, Addr: ifi.HardwareAddr}},
	}
	send := func() error { return c.WriteTo(ns, nil, group) }
	var macs []net.HardwareAddr
	readOne := func() error {
		m, _, _, err := c.ReadFrom()
		if err != nil {
			return err
		}
		na, ok := m.(*ndp.NeighborAdvertisement)
		if !ok || na.TargetAddress != addr {
			return nil
		}
		if mac := targetLLA(na); mac != nil && string(mac) != string(ifi.HardwareAddr) {
			macs = addMAC(macs, mac)
		}
		return nil
	}
	err = collect(ctx, c, deadline, send, readOne)
	return macs, err
}

func targetLLA(na *ndp.NeighborAdvertisement) net.HardwareAddr {
	for _, o := range na.Options {
		if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Target {
			return l.Addr
		}
	}
	return nil
}

// announce sends count rounds, interval apart, of gratuitous ARP (IPv4: a
// request and a reply per round, both broadcast, sender and target the
// address, sender MAC the interface's; the reply's target MAC is its own
// too, which is what a Linux neighbour takes as gratuitous) or of an
// unsolicited neighbour advertisement (IPv6: override flag, to all-nodes,
// target link-layer address the interface's MAC).
func (e *Executor) announce(ctx context.Context, count int, interval time.Duration) error {
	l, err := e.link()
	if err != nil {
		return err
	}
	ifi := ifaceOf(l)
	addr := e.cfg.Address.Addr()
	var round func() error
	var closer func() error
	if addr.Is4() {
		c, err := listenARP(e.space, ifi)
		if err != nil {
			return err
		}
		closer = c.Close
		round = func() error {
			if err := sendARP(c, ifi, arp.OperationRequest, addr, zeroMAC, addr); err != nil {
				return err
			}
			return sendARP(c, ifi, arp.OperationReply, addr, ifi.HardwareAddr, addr)
		}
	} else {
		c, err := listenND(e.space, ifi)
		if err != nil {
			return err
		}
		closer = c.Close
		na := &ndp.NeighborAdvertisement{
			Override:      true,
			TargetAddress: addr,
			Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: ifi.HardwareAddr}},
		}
		round = func() error { return c.WriteTo(na, nil, netip.IPv6LinkLocalAllNodes()) }
	}
	defer closer()
	return repeat(ctx, count, interval, round)
}

// repeat calls round count times, interval apart, until ctx ends.
func repeat(ctx context.Context, count int, interval time.Duration, round func() error) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for i := 0; i < count; i++ {
		if i > 0 {
			t.Reset(interval)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-t.C:
			}
		}
		if err := round(); err != nil {
			return fmt.Errorf("announce round %d of %d: %w", i+1, count, err)
		}
	}
	return nil
}
