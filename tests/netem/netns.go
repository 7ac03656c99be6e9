package netem

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Subnet is the prefix of every test host's address. It is RFC 2544's
// benchmarking range; the addresses exist only inside the namespaces a Net
// creates (a bridge in a namespace of its own), never on the machine's own
// interfaces, so nothing sent to them can leave the machine.
const Subnet = "198.18.0."

// Filter is how a partition treats the blocked peer's packets.
type Filter int

// Filters.
const (
	// Drop silently drops every packet (iptables DROP): connects time out,
	// nothing is reset. A real partition: only heartbeats can tell.
	Drop Filter = iota
	// Reject answers every TCP packet but a reset with a reset (REJECT
	// --reject-with tcp-reset): connects are refused within milliseconds
	// and open connections are reset, so a live host looks like a dead
	// process — the crash fast path's documented false positive. Other
	// protocols pass (the cluster speaks only TCP).
	Reject
)

func (f Filter) String() string {
	if f == Reject {
		return "reject"
	}
	return "drop"
}

func (f Filter) rule(src string) []string {
	if f == Reject {
		// Resets themselves pass, or a two-way reject would swallow the
		// reset the other side answered with and look like a DROP.
		return []string{"-s", src, "-p", "tcp", "--tcp-flags", "RST", "NONE", "-j", "REJECT", "--reject-with", "tcp-reset"}
	}
	return []string{"-s", src, "-j", "DROP"}
}

// Require fails t unless this process can create network namespaces and use
// iptables inside them: root, the `ip` command (iproute2) and the
// `iptables` command. The drills that need them run in CI as root with
// both installed; elsewhere they fail here with what is missing.
func Require(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("root (running as uid %d; network namespaces and iptables need root)", os.Geteuid()))
	}
	for _, c := range []struct{ cmd, pkg string }{{"ip", "iproute2"}, {"iptables", "iptables"}} {
		if _, err := exec.LookPath(c.cmd); err != nil {
			missing = append(missing, fmt.Sprintf("the %q command (Debian package %s: apt-get install -y %s)", c.cmd, c.pkg, c.pkg))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("netem: this test runs processes on separate test hosts (network namespaces) and partitions them with iptables; missing: %s", strings.Join(missing, "; "))
	}
}

var netSeq atomic.Int64

// Net is a set of test hosts: one network namespace each, joined by veth
// pairs to a bridge in a switch namespace, all created by this Net and
// removed when the test ends.
type Net struct {
	t      testing.TB
	prefix string
	sw     string
	Hosts  []*Host

	mu    sync.Mutex
	rules []rule // iptables rules in force; mu must be held.
}

type rule struct {
	host *Host // the host whose INPUT chain holds the rule
	from *Host // the host whose packets it filters
	spec []string
}

// Host is one test host: a network namespace with one address.
type Host struct {
	Name string // label given to NewNet
	NS   string // namespace name (/var/run/netns/NS)
	Addr string // its address, Subnet + n

	net    *Net
	client *http.Client
}

// NewNet creates one test host per name (addresses Subnet+1, +2, … in that
// order) and registers their removal with t.Cleanup. It calls Require first.
func NewNet(t testing.TB, names ...string) *Net {
	t.Helper()
	Require(t)
	n := &Net{t: t, prefix: fmt.Sprintf("netem%d-%d", os.Getpid(), netSeq.Add(1))}
	n.sw = n.prefix + "-sw"
	n.addNS(n.sw)
	n.ip("-n", n.sw, "link", "set", "lo", "up")
	n.ip("-n", n.sw, "link", "add", "br0", "type", "bridge")
	n.ip("-n", n.sw, "link", "set", "br0", "up")
	for i, name := range names {
		h := &Host{Name: name, NS: fmt.Sprintf("%s-%d", n.prefix, i), Addr: Subnet + strconv.Itoa(i+1), net: n}
		n.addNS(h.NS)
		port := "p" + strconv.Itoa(i)
		// Both ends are created directly inside their namespaces: nothing
		// appears, even for a moment, among the machine's own interfaces.
		n.ip("link", "add", "eth0", "netns", h.NS, "type", "veth", "peer", "name", port, "netns", n.sw)
		n.ip("-n", n.sw, "link", "set", port, "master", "br0")
		n.ip("-n", n.sw, "link", "set", port, "up")
		n.ip("-n", h.NS, "addr", "add", h.Addr+"/24", "dev", "eth0")
		n.ip("-n", h.NS, "link", "set", "eth0", "up")
		n.ip("-n", h.NS, "link", "set", "lo", "up")
		n.Hosts = append(n.Hosts, h)
	}
	if len(n.Hosts) > 0 {
		if out, err := n.Hosts[0].Output("iptables", "-w", "-L", "INPUT", "-n"); err != nil {
			t.Fatalf("netem: iptables does not work inside a network namespace: %v\n%s", err, out)
		}
	}
	return n
}

// Host returns the host called name.
func (n *Net) Host(name string) *Host {
	for _, h := range n.Hosts {
		if h.Name == name {
			return h
		}
	}
	n.t.Fatalf("netem: no host %q", name)
	return nil
}

// addNS creates a namespace and registers its removal: first every process
// still inside (they were started by this test), then the namespace, which
// takes its veth ends with it.
func (n *Net) addNS(ns string) {
	n.t.Helper()
	n.ip("netns", "add", ns)
	n.t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
			n.t.Errorf("netem: ip netns del %s: %v\n%s", ns, err, out)
		}
	})
}

func (n *Net) ip(args ...string) {
	n.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		n.t.Fatalf("netem: ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Wrap is the command prefix that runs a program inside the host's
// namespace (`ip netns exec NS`); `ip` execs the program, so its process id
// is the program's own and signals reach it directly.
func (h *Host) Wrap() []string { return []string{"ip", "netns", "exec", h.NS} }

// Output runs a command inside the host's namespace.
func (h *Host) Output(args ...string) ([]byte, error) {
	return exec.Command("ip", append([]string{"netns", "exec", h.NS}, args...)...).CombinedOutput()
}

// Block drops (or rejects) every packet from `from` arriving at `to`: a
// one-way cut; `to` can still send to `from`, but TCP needs both ways.
func (n *Net) Block(from, to *Host, f Filter) {
	n.t.Helper()
	spec := f.rule(from.Addr)
	if out, err := to.Output(append([]string{"iptables", "-w", "-A", "INPUT"}, spec...)...); err != nil {
		n.t.Fatalf("netem: block %s→%s: %v\n%s", from.Name, to.Name, err, out)
	}
	n.mu.Lock()
	n.rules = append(n.rules, rule{host: to, from: from, spec: spec})
	n.mu.Unlock()
}

// Partition cuts every host of a from every host of b, both ways.
func (n *Net) Partition(a, b []*Host, f Filter) {
	n.t.Helper()
	for _, x := range a {
		for _, y := range b {
			n.Block(x, y, f)
			n.Block(y, x, f)
		}
	}
}

// Heal removes every rule Block added.
func (n *Net) Heal() {
	n.t.Helper()
	n.mu.Lock()
	rules := n.rules
	n.rules = nil
	n.mu.Unlock()
	for _, r := range rules {
		if out, err := r.host.Output(append([]string{"iptables", "-w", "-D", "INPUT"}, r.spec...)...); err != nil {
			n.t.Fatalf("netem: heal %s: %v\n%s", r.host.Name, err, out)
		}
	}
}

// Unblock removes the rules Block(from, to, …) added, of either filter,
// and leaves every other rule in force: the heal of one cut while others
// (between other hosts) go on.
func (n *Net) Unblock(from, to *Host) {
	n.t.Helper()
	n.mu.Lock()
	var keep, drop []rule
	for _, r := range n.rules {
		if r.from == from && r.host == to {
			drop = append(drop, r)
		} else {
			keep = append(keep, r)
		}
	}
	n.rules = keep
	n.mu.Unlock()
	for _, r := range drop {
		if out, err := r.host.Output(append([]string{"iptables", "-w", "-D", "INPUT"}, r.spec...)...); err != nil {
			n.t.Fatalf("netem: unblock %s→%s: %v\n%s", from.Name, to.Name, err, out)
		}
	}
}

// DialContext opens a connection from inside the host's namespace: the
// socket is created on a thread that has entered the namespace, and stays
// in it. The harness uses it to reach a node's loopback-only HTTP port.
func (h *Host) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var conn net.Conn
	err := h.inNamespace(func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	return conn, err
}

// Listen opens a listener inside the host's namespace (address is as for
// net.Listen, e.g. "127.0.0.1:5432": the host's own loopback). Connections
// it accepts belong to the namespace; the caller may serve them from any
// goroutine, and dial elsewhere (the machine's loopback) from an ordinary
// goroutine. A test uses it to give a process on the host a path of its
// own to a server on the machine's loopback, which the test can then cut.
func (h *Host) Listen(network, address string) (net.Listener, error) {
	var l net.Listener
	err := h.inNamespace(func() error {
		var err error
		l, err = net.Listen(network, address)
		return err
	})
	return l, err
}

// HTTPClient is an http.Client whose connections are made inside the
// host's namespace, with a per-request timeout of 2 s (a stopped process
// must not hang the caller).
func (h *Host) HTTPClient() *http.Client {
	if h.client == nil {
		h.client = &http.Client{
			Timeout:   2 * time.Second,
			Transport: &http.Transport{DialContext: h.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 30 * time.Second},
		}
	}
	return h.client
}

// inNamespace runs fn on this goroutine's thread while it is inside the
// host's network namespace, then moves the thread back. If moving back
// fails the thread stays locked, and the Go runtime ends it with the
// goroutine instead of reusing it.
func (h *Host) inNamespace(fn func() error) error {
	runtime.LockOSThread()
	own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", syscall.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netem: own namespace: %w", err)
	}
	defer own.Close()
	target, err := os.Open("/var/run/netns/" + h.NS)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netem: namespace %s: %w", h.NS, err)
	}
	defer target.Close()
	if err := setns(target.Fd()); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("netem: enter namespace %s: %w", h.NS, err)
	}
	ferr := fn()
	if err := setns(own.Fd()); err != nil {
		return errors.Join(ferr, fmt.Errorf("netem: leave namespace %s: %w", h.NS, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

func setns(fd uintptr) error { return unix.Setns(int(fd), unix.CLONE_NEWNET) }
