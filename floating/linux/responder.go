package linux

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/mdlayher/arp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/ndp"
	"github.com/mdlayher/packet"
	"golang.org/x/net/ipv6"
)

// reopenAfter is how long the responder waits before it opens its socket
// again after a failure (the interface was deleted and re-created, say).
const reopenAfter = 250 * time.Millisecond

// responder answers ARP requests (IPv4) or neighbour solicitations (IPv6)
// for the floating address on the interface, with the interface's MAC,
// while the hold answers (holding ∧ now < until). It is the only thing on
// the node that answers for the address: the kernel does not (the address
// is on lo; see quietARP), so a frozen or dead process is silent.
//
// One goroutine reads, decides and answers; startResponder returns once its
// first socket is open (or failed: it retries every reopenAfter, and
// failure says why); stop ends it. A request is
// judged by the monotonic clock read after the request was read, so a
// request queued while the process was frozen is judged at its wake.
type responder struct {
	sp    space
	open  func() (*net.Interface, error) // the interface as it is now
	addr  netip.Addr
	hold  *hold
	clock func() time.Time

	stopc chan struct{}
	done  chan struct{}
	ready chan struct{} // closed once the first socket is open or failed
	once  sync.Once

	mu   sync.Mutex
	conn io.Closer // the open socket, closed by stop; mu must be held.
	err  error     // the last failure, nil while serving; mu must be held.
}

func startResponder(sp space, open func() (*net.Interface, error), addr netip.Addr, h *hold, clock func() time.Time) *responder {
	r := &responder{sp: sp, open: open, addr: addr, hold: h, clock: clock,
		stopc: make(chan struct{}), done: make(chan struct{}), ready: make(chan struct{})}
	go r.run()
	<-r.ready
	return r
}

func (r *responder) readyNow() { r.once.Do(func() { close(r.ready) }) }

// stop ends the goroutine and waits for it.
func (r *responder) stop() {
	close(r.stopc)
	r.mu.Lock()
	if r.conn != nil {
		r.conn.Close()
	}
	r.mu.Unlock()
	<-r.done
}

// failure is the responder's last failure to open or read its socket (nil
// while it serves).
func (r *responder) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *responder) run() {
	defer close(r.done)
	defer r.readyNow()
	for {
		err := r.serveOnce()
		select {
		case <-r.stopc:
			return
		default:
		}
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
		r.readyNow()
		select {
		case <-r.stopc:
			return
		case <-time.After(reopenAfter):
		}
	}
}

// serveOnce opens the socket and serves until it fails or stop closes it.
func (r *responder) serveOnce() error {
	ifi, err := r.open()
	if err != nil {
		return err
	}
	if r.addr.Is4() {
		c, err := listenARP(r.sp, ifi)
		if err != nil {
			return err
		}
		if !r.serving(c) {
			return nil
		}
		return r.serveARP(c, ifi)
	}
	c, err := r.listenNS(ifi)
	if err != nil {
		return err
	}
	if !r.serving(c) {
		return nil
	}
	return r.serveNS(c, ifi)
}

// serving records c as the open socket; false (c closed) when stop came
// first.
func (r *responder) serving(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.stopc:
		c.Close()
		return false
	default:
	}
	r.conn, r.err = c, nil
	r.readyNow()
	return true
}

// answers asks the hold with the clock read now.
func (r *responder) answers() bool { return r.hold.get().answers(r.clock()) }

// serveARP answers every ARP request for the address (a probe with sender
// 0.0.0.0 too) from another MAC, unicast to the requester, while the hold
// answers. Gratuitous requests (sender = target = the address) are
// announcements, not questions.
func (r *responder) serveARP(c *packet.Conn, ifi *net.Interface) error {
	defer c.Close()
	b := make([]byte, max(ifi.MTU, 1500)+18)
	for {
		n, _, err := c.ReadFrom(b)
		if err != nil {
			return fmt.Errorf("floating/linux: responder: read ARP on %q: %w", ifi.Name, err)
		}
		var f ethernet.Frame
		var p arp.Packet
		if f.UnmarshalBinary(b[:n]) != nil || f.EtherType != ethernet.EtherTypeARP || p.UnmarshalBinary(f.Payload) != nil {
			continue
		}
		if p.Operation != arp.OperationRequest || p.TargetIP != r.addr || p.SenderIP == r.addr ||
			string(p.SenderHardwareAddr) == string(ifi.HardwareAddr) || !r.answers() {
			continue
		}
		if err := sendARPTo(c, ifi, p.SenderHardwareAddr, arp.OperationReply, r.addr, p.SenderHardwareAddr, p.SenderIP); err != nil {
			return fmt.Errorf("floating/linux: responder: answer ARP on %q: %w", ifi.Name, err)
		}
	}
}

// listenNS opens an ICMPv6 socket that receives neighbour solicitations
// sent to the address's solicited-node group (joined on the interface:
// the kernel joins it for addresses on the interface only, and a bridge
// that snoops MLD forwards it only to members) and to the address itself
// (a neighbour's unicast reachability probe).
func (r *responder) listenNS(ifi *net.Interface) (*ndp.Conn, error) {
	c, err := listenNDAt(r.sp, ifi, ndp.Unspecified)
	if err != nil {
		return nil, err
	}
	group, err := ndp.SolicitedNodeMulticast(r.addr)
	if err == nil {
		err = c.JoinGroup(group)
	}
	if err == nil {
		var f ipv6.ICMPFilter
		f.SetAll(true)
		f.Accept(ipv6.ICMPTypeNeighborSolicitation)
		err = c.SetICMPFilter(&f)
	}
	if err == nil {
		err = c.SetControlMessage(ipv6.FlagInterface, true)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("floating/linux: responder: NDP socket on %q: %w", ifi.Name, err)
	}
	return c, nil
}

// serveNS answers every solicitation for the address received on the
// interface from another MAC while the hold answers: a solicited
// advertisement (override, the interface's MAC as target link-layer
// address) to the solicitor, or to all-nodes without the solicited flag
// when the solicitor has no address yet (DAD).
func (r *responder) serveNS(c *ndp.Conn, ifi *net.Interface) error {
	defer c.Close()
	b := make([]byte, max(ifi.MTU, 1280))
	for {
		n, cm, src, err := c.ReadRaw(b)
		if err != nil {
			return fmt.Errorf("floating/linux: responder: read ND on %q: %w", ifi.Name, err)
		}
		if cm != nil && cm.IfIndex != 0 && cm.IfIndex != ifi.Index {
			continue
		}
		m, err := ndp.ParseMessage(b[:n])
		if err != nil {
			continue
		}
		ns, ok := m.(*ndp.NeighborSolicitation)
		if !ok || ns.TargetAddress != r.addr || string(sourceLLA(ns)) == string(ifi.HardwareAddr) || !r.answers() {
			continue
		}
		na := &ndp.NeighborAdvertisement{
			Override:      true,
			TargetAddress: r.addr,
			Options:       []ndp.Option{&ndp.LinkLayerAddress{Direction: ndp.Target, Addr: ifi.HardwareAddr}},
		}
		dst := src.WithZone("")
		if dst.IsUnspecified() {
			dst = netip.IPv6LinkLocalAllNodes()
		} else {
			na.Solicited = true
		}
		if err := c.WriteTo(na, nil, dst); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("floating/linux: responder: answer ND on %q: %w", ifi.Name, err)
		}
	}
}

func sourceLLA(ns *ndp.NeighborSolicitation) net.HardwareAddr {
	for _, o := range ns.Options {
		if l, ok := o.(*ndp.LinkLayerAddress); ok && l.Direction == ndp.Source {
			return l.Addr
		}
	}
	return nil
}
