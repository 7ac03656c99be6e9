package linux

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// The floating addresses of the tests: inside netem's subnet (IPv4) and a
// unique-local prefix the tests give every host (IPv6); both exist only in
// the namespaces the test creates.
var (
	float4 = netip.MustParsePrefix(netem.Subnet + "100/24")
	float6 = netip.MustParsePrefix("fd00:18::100/64")
)

// segment is a bridge with host namespaces a, b (the pair), client and
// intruder, as netem makes them.
type segment struct {
	net                    *netem.Net
	a, b, client, intruder *netem.Host
}

func newSegment(t *testing.T) *segment {
	t.Helper()
	n := netem.NewNet(t, "a", "b", "client", "intruder")
	return &segment{net: n, a: n.Host("a"), b: n.Host("b"), client: n.Host("client"), intruder: n.Host("intruder")}
}

func nsPath(h *netem.Host) string { return "/var/run/netns/" + h.NS }

func link(h *netem.Host) Link { return Link{Namespace: nsPath(h), Interface: "eth0"} }

// sh runs a command inside h, as a human at the host's shell would.
func sh(t *testing.T, h *netem.Host, args ...string) {
	t.Helper()
	if out, err := h.Output(args...); err != nil {
		t.Fatalf("%s: %v: %v\n%s", h.Name, args, err, out)
	}
}

// withIPv6 gives every host fd00:18::N/64 (no DAD) and waits until every
// link-local address has left DAD, which the NDP sockets bind to.
func (s *segment) withIPv6(t *testing.T) {
	t.Helper()
	for i, h := range []*netem.Host{s.a, s.b, s.client, s.intruder} {
		sh(t, h, "ip", "-6", "addr", "add", fmt.Sprintf("fd00:18::%d/64", i+1), "dev", "eth0", "nodad")
	}
	for _, h := range []*netem.Host{s.a, s.b, s.client, s.intruder} {
		nl := handleIn(t, h)
		poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			l, err := nl.LinkByName("eth0")
			if err != nil {
				return err
			}
			as, err := nl.AddrList(l, netlink.FAMILY_V6)
			if err != nil {
				return err
			}
			for _, a := range as {
				if a.IP.IsLinkLocalUnicast() && a.Flags&unix.IFA_F_TENTATIVE == 0 {
					return nil
				}
			}
			return fmt.Errorf("%s: no usable link-local address yet: %v", h.Name, as)
		})
	}
}

// handleIn is a netlink handle inside h, closed when the test ends.
func handleIn(t *testing.T, h *netem.Host) *netlink.Handle {
	t.Helper()
	ns, err := netns.GetFromPath(nsPath(h))
	if err != nil {
		t.Fatal(err)
	}
	nl, err := netlink.NewHandleAt(ns)
	if err != nil {
		ns.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { nl.Close(); ns.Close() })
	return nl
}

// macOf is h's eth0 MAC.
func macOf(t *testing.T, h *netem.Host) net.HardwareAddr {
	t.Helper()
	l, err := handleIn(t, h).LinkByName("eth0")
	if err != nil {
		t.Fatal(err)
	}
	return l.Attrs().HardwareAddr
}

// executor makes h's executor for addr, with its own fence file and a hold
// of a minute (no test renews it: a seize answers for the whole test).
func executor(t *testing.T, h *netem.Host, addr netip.Prefix, known map[string]string) *Executor {
	t.Helper()
	return executorHold(t, h, addr, known, time.Minute)
}

// executorHold is executor with the hold a seize starts with.
func executorHold(t *testing.T, h *netem.Host, addr netip.Prefix, known map[string]string, hold time.Duration) *Executor {
	t.Helper()
	fence, err := floating.OpenFileFence(filepath.Join(t.TempDir(), "fence"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Config{
		Interface:    "eth0",
		Address:      addr,
		Fence:        fence,
		Self:         h.Name + ":4053",
		Known:        func(m net.HardwareAddr) (string, bool) { s, ok := known[m.String()]; return s, ok },
		ProbeTimeout: 300 * time.Millisecond,
		Namespace:    nsPath(h),
		Hold:         hold,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// plans as the planner makes them for the linux provider.
func announceKind(addr netip.Prefix) string {
	if addr.Addr().Is4() {
		return KindGARP
	}
	return KindUnsolicitedNA
}

func takePlan(verb floating.Verb, addr netip.Prefix, epoch uint64, count int, interval time.Duration) floating.Plan {
	a := addr.String()
	return floating.Plan{
		Provider: floating.ProviderLinux,
		Intent:   floating.Intent{Address: addr, Verb: verb, Epoch: epoch},
		Actions: []floating.Action{
			{Op: floating.OpAddrAdd, Target: "eth0", Epoch: epoch, Params: map[string]string{"address": a}},
			{Op: floating.OpAnnounce, Target: "eth0", Epoch: epoch, Params: map[string]string{
				"address": a, "kind": announceKind(addr), "count": strconv.Itoa(count), "interval": interval.String()}},
		},
	}
}

func releasePlan(addr netip.Prefix, epoch uint64) floating.Plan {
	return floating.Plan{
		Provider: floating.ProviderLinux,
		Intent:   floating.Intent{Address: addr, Verb: floating.VerbRelease, Epoch: epoch},
		Actions:  []floating.Action{{Op: floating.OpAddrDel, Target: "eth0", Epoch: epoch, Params: map[string]string{"address": addr.String()}}},
	}
}

func apply(t *testing.T, e *Executor, p floating.Plan) {
	t.Helper()
	if err := e.Apply(context.Background(), p); err != nil {
		t.Fatalf("apply %s at %d: %v", p.Intent.Verb, p.Intent.Epoch, err)
	}
}

// probeFrom runs Probe from h for d.
func probeFrom(t *testing.T, h *netem.Host, addr netip.Addr, d time.Duration) []net.HardwareAddr {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	macs, err := Probe(ctx, link(h), addr)
	if err != nil {
		t.Fatalf("probe from %s: %v", h.Name, err)
	}
	return macs
}

func macsString(macs []net.HardwareAddr) string {
	s := "["
	for i, m := range macs {
		if i > 0 {
			s += " "
		}
		s += m.String()
	}
	return s + "]"
}

// talk sends one UDP datagram from h to addr: the kernel of h resolves the
// address (ARP or ND) and keeps a neighbour entry, as a real client's
// kernel does for the server it talks to.
func talk(t *testing.T, h *netem.Host, addr netip.Addr) {
	t.Helper()
	c, err := h.DialContext(context.Background(), "udp", netip.AddrPortFrom(addr, 9).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

// neighbour is the MAC h's kernel holds for addr (nil: no entry, or an
// entry without a MAC, e.g. INCOMPLETE or FAILED).
func neighbour(nl *netlink.Handle, addr netip.Addr) (net.HardwareAddr, int, error) {
	fam := netlink.FAMILY_V4
	if addr.Is6() {
		fam = netlink.FAMILY_V6
	}
	ns, err := nl.NeighList(0, fam)
	if err != nil {
		return nil, 0, err
	}
	for _, n := range ns {
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == addr && len(n.HardwareAddr) > 0 {
			return n.HardwareAddr, n.State, nil
		}
	}
	return nil, 0, nil
}

// waitNeighbour waits until h's neighbour entry for addr is want.
func waitNeighbour(t *testing.T, nl *netlink.Handle, who string, addr netip.Addr, want net.HardwareAddr) {
	t.Helper()
	poll.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		got, state, err := neighbour(nl, addr)
		if err != nil {
			return err
		}
		if got.String() != want.String() {
			return fmt.Errorf("%s's neighbour entry for %s is %q (state %#x), want %s", who, addr, got, state, want)
		}
		return nil
	})
}
