package linux

import (
	"errors"
	"fmt"
	"net"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// link looks the interface up (every operation does: its index or MAC may
// change under a running node).
func (e *Executor) link() (netlink.Link, error) {
	l, err := e.nl.LinkByName(e.cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("floating/linux: interface %q: %w", e.cfg.Interface, err)
	}
	return l, nil
}

// ifaceOf is the net.Interface the packet libraries take.
func ifaceOf(l netlink.Link) *net.Interface {
	a := l.Attrs()
	return &net.Interface{Index: a.Index, MTU: a.MTU, Name: a.Name, HardwareAddr: a.HardwareAddr, Flags: a.Flags}
}

// held lists the interface's entries of the floating address (any prefix
// length: one added by hand with another counts).
func (e *Executor) held(l netlink.Link) ([]netlink.Addr, error) {
	fam := netlink.FAMILY_V4
	if e.cfg.Address.Addr().Is6() {
		fam = netlink.FAMILY_V6
	}
	all, err := e.nl.AddrList(l, fam)
	if err != nil {
		return nil, fmt.Errorf("floating/linux: list addresses of %q: %w", e.cfg.Interface, err)
	}
	want := net.IP(e.cfg.Address.Addr().AsSlice())
	var out []netlink.Addr
	for _, a := range all {
		if a.IPNet != nil && a.IP.Equal(want) {
			out = append(out, a)
		}
	}
	return out, nil
}

func (e *Executor) present(l netlink.Link) (bool, error) {
	h, err := e.held(l)
	return len(h) > 0, err
}

// addrFlags: no prefix route (routing stays what the node's own addresses
// make it, and the floating address is never chosen as a source for the
// node's own traffic to a subnet it alone would reach); for IPv6 no
// duplicate address detection either (a takeover from a frozen holder that
// still answers would leave the address "dadfailed", and DAD's tentative
// second would delay every seize).
func (e *Executor) addrFlags() int {
	f := unix.IFA_F_NOPREFIXROUTE
	if e.cfg.Address.Addr().Is6() {
		f |= unix.IFA_F_NODAD
	}
	return f
}

// addAddr adds the address with its prefix length; already present (with
// any prefix length) is success.
func (e *Executor) addAddr() error {
	l, err := e.link()
	if err != nil {
		return err
	}
	if ok, err := e.present(l); err != nil || ok {
		return err
	}
	p := e.cfg.Address
	a := &netlink.Addr{
		IPNet: &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())},
		Flags: e.addrFlags(),
	}
	if err := e.nl.AddrAdd(l, a); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add %s to %q: %w", p, e.cfg.Interface, err)
	}
	return nil
}

// delAddr removes every entry of the address; absent is success.
func (e *Executor) delAddr() (removed bool, err error) {
	l, err := e.link()
	if err != nil {
		return false, err
	}
	h, err := e.held(l)
	if err != nil {
		return false, err
	}
	for _, a := range h {
		if err := e.nl.AddrDel(l, &a); err != nil && !errors.Is(err, unix.EADDRNOTAVAIL) {
			return removed, fmt.Errorf("remove %s from %q: %w", a.IPNet, e.cfg.Interface, err)
		}
		removed = true
	}
	return removed, nil
}
