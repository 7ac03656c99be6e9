package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	m "github.com/otopcua/otopcua/cluster/membership"
)

// TestInteraction runs the scenarios in testdata/*.txt against an in-memory
// network of nodes. Regenerate the expected output with -rewrite and read
// the diff.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := &interactionEnv{nw: NewNetwork()}
		datadriven.RunTest(t, path, env.handle)
	})
}

type interactionEnv struct {
	nw *Network
}

func (e *interactionEnv) handle(t *testing.T, d *datadriven.TestData) string {
	var out strings.Builder
	switch d.Cmd {
	case "add-nodes":
		e.addNodes(t, d)
	case "start":
		for _, n := range names(d) {
			e.nw.Start(n)
		}
		e.printLog(&out, d)
	case "tick":
		e.nw.Advance(durationArg(t, d))
		e.printLog(&out, d)
	case "stabilize":
		e.stabilize(t, d, &out)
	case "deliver":
		e.nw.Deliver()
		e.printLog(&out, d)
	case "inflight":
		for _, msg := range e.nw.InFlight() {
			out.WriteString(describe(msg) + "\n")
		}
	case "partition":
		var groups [][]string
		for _, g := range strings.Split(d.CmdArgs[0].Key, "|") {
			groups = append(groups, strings.Split(g, ","))
		}
		e.nw.Partition(groups...)
	case "listen":
		for _, n := range names(d) {
			e.nw.Listen(n)
		}
	case "heal":
		e.nw.Heal()
	case "secret":
		// secret a=s1 b=none: Cluster:Secret of each host from now on.
		for _, a := range d.CmdArgs {
			v := a.Vals[0]
			if v == "none" {
				v = ""
			}
			e.nw.Host(a.Key).Secret = v
		}
	case "kill":
		e.kill(t, d)
		e.printLog(&out, d)
	case "break-connection":
		for _, n := range names(d) {
			e.nw.BreakConnection(n)
		}
		e.printLog(&out, d)
	case "proven-dead":
		for _, h := range e.nw.Running() {
			var ps []string
			for _, u := range h.Node.ProvenDead() {
				ps = append(ps, short(u))
			}
			fmt.Fprintf(&out, "%s: [%s]\n", short(h.Node.Self()), strings.Join(ps, " "))
		}
	case "restart":
		for _, n := range names(d) {
			e.nw.Restart(n)
		}
		e.printLog(&out, d)
	case "freeze":
		for _, n := range names(d) {
			e.nw.Freeze(n)
		}
		e.printLog(&out, d)
	case "thaw":
		for _, n := range names(d) {
			e.nw.Thaw(n)
		}
		e.printLog(&out, d)
	case "leave":
		for _, n := range names(d) {
			e.nw.Leave(n)
		}
	case "down":
		var by string
		d.ScanArgs(t, "by", &by)
		e.nw.Down(by, names(d)[0])
	case "send-stale":
		e.sendStale(t, d)
	case "lease-take":
		// lease-take a: a's lease keeper takes the shared lease (as a
		// Primary whose set looked split does).
		n := names(d)[0]
		if !e.nw.Lease.Acquire(e.nw.Host(n).Node.Self().String()) {
			d.Fatalf(t, "lease-take %s: held by %s", n, e.nw.Lease.Holder())
		}
	case "lease-lapse":
		// lease-lapse: the holder stopped renewing for a TTL; the store
		// frees the lease.
		if h := e.nw.Lease.Holder(); h != "" {
			e.nw.Lease.Release(h)
		}
	case "lease-holder":
		fmt.Fprintf(&out, "lease holder: %q\n", e.nw.Lease.Holder())
	case "members":
		e.members(&out, names(d))
	case "oldest":
		e.oldest(t, d, &out)
	case "role-leader":
		e.roleLeader(d, &out)
	case "dropped":
		for _, h := range e.nw.Hosts() {
			if h.Node != nil {
				ds := h.Node.Dropped()
				fmt.Fprintf(&out, "%s: wrong-incarnation=%d misaddressed=%d\n", short(h.Node.Self()), ds.WrongIncarnation, ds.Misaddressed)
			}
		}
	default:
		d.Fatalf(t, "unknown command %q", d.Cmd)
	}
	return out.String()
}

// names are the bare arguments (no value) of a command, but for the
// flags silent, verbose and quiet.
func names(d *datadriven.TestData) []string {
	var ns []string
	for _, a := range d.CmdArgs {
		if len(a.Vals) == 0 && a.Key != "silent" && a.Key != "verbose" && a.Key != "quiet" {
			ns = append(ns, a.Key)
		}
	}
	return ns
}

// kill a b [linger=200ms | quiet]: SIGKILL; with linger the listening
// socket still accepts that long after the connections dropped; quiet
// gives the peers no connection event (only their detectors notice).
func (e *interactionEnv) kill(t *testing.T, d *datadriven.TestData) {
	var linger int64
	if d.HasArg("linger") {
		var s string
		d.ScanArgs(t, "linger", &s)
		linger = parseDuration(t, d, s)
	}
	for _, n := range names(d) {
		switch {
		case d.HasArg("quiet"):
			e.nw.KillQuiet(n)
		case linger > 0:
			e.nw.KillLingering(n, linger)
		default:
			e.nw.Kill(n)
		}
	}
}

func durationArg(t *testing.T, d *datadriven.TestData) int64 {
	return parseDuration(t, d, names(d)[0])
}

func parseDuration(t *testing.T, d *datadriven.TestData, s string) int64 {
	dur, err := time.ParseDuration(s)
	if err != nil {
		d.Fatalf(t, "bad duration %q: %v", s, err)
	}
	return dur.Milliseconds()
}

func (e *interactionEnv) addNodes(t *testing.T, d *datadriven.TestData) {
	var seeds, roles []string
	var clusterID, strategy, sbrRole string
	selfForm, stableAfter, quorum := int64(-2), int64(-2), 0
	fastPath, downIfAlone := true, true
	heartbeat, pause, reaper, downingEvery, leaseRetry := int64(0), int64(0), int64(0), int64(0), int64(0)
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "seeds":
			seeds = a.Vals
		case "roles":
			roles = a.Vals
		case "cluster-id":
			clusterID = a.Vals[0]
		case "downing":
			strategy = a.Vals[0]
		case "sbr-role":
			sbrRole = a.Vals[0]
		case "self-form":
			selfForm = parseDuration(t, d, a.Vals[0])
		case "stable-after":
			stableAfter = parseDuration(t, d, a.Vals[0])
		case "quorum":
			quorum, _ = strconv.Atoi(a.Vals[0])
		case "fast-path":
			fastPath = a.Vals[0] != "off"
		case "down-if-alone":
			downIfAlone = a.Vals[0] != "off"
		case "heartbeat":
			heartbeat = parseDuration(t, d, a.Vals[0])
		case "pause":
			pause = parseDuration(t, d, a.Vals[0])
		case "reaper":
			reaper = parseDuration(t, d, a.Vals[0])
		case "downing-every":
			downingEvery = parseDuration(t, d, a.Vals[0])
		case "lease-retry":
			leaseRetry = parseDuration(t, d, a.Vals[0])
		}
	}
	for _, n := range names(d) {
		e.nw.AddNode(n, func(c *Config) {
			for _, s := range seeds {
				c.Seeds = append(c.Seeds, Address(s))
			}
			c.Roles = roles
			c.ClusterID = clusterID
			if strategy != "" {
				c.Downing.Strategy = strategy
			}
			c.Downing.Role = sbrRole
			c.Downing.QuorumSize = quorum
			c.Downing.DownIfAlone = downIfAlone
			if stableAfter != -2 {
				c.Downing.StableAfter = stableAfter
			}
			if selfForm != -2 {
				c.SelfFormAfter = selfForm
			}
			c.CrashFastPath = fastPath
			if heartbeat > 0 {
				c.HeartbeatInterval, c.FailureDetector.FirstHeartbeatEstimate = heartbeat, heartbeat
			}
			if pause > 0 {
				c.FailureDetector.AcceptableHeartbeatPause = pause
			}
			if reaper > 0 {
				c.UnreachableReaperInterval = reaper
			}
			c.DowningInterval = downingEvery
			c.Downing.LeaseRetryFor = leaseRetry
		})
	}
}

// shown reports whether a log line is printed: member lifecycle,
// reachability, leadership, notes and process lines, but not MemberJoined
// or RoleLeaderChanged noise unless verbose.
func shown(l LogLine, verbose bool) bool {
	if l.Event == nil || verbose {
		return true
	}
	switch l.Event.Kind {
	case m.MemberJoined, m.MemberWeaklyUp, m.RoleLeaderChanged, m.LeaderChanged:
		return false
	}
	return true
}

func (e *interactionEnv) printLog(out *strings.Builder, d *datadriven.TestData) {
	lines := e.nw.TakeLog()
	if d.HasArg("silent") {
		return
	}
	verbose := d.HasArg("verbose")
	for _, l := range lines {
		if shown(l, verbose) {
			out.WriteString(strip(l.String()) + "\n")
		}
	}
}

// stabilize runs until nothing was logged for `quiet` (default 10s), at most
// `max` (default 120s), and says how long it took.
func (e *interactionEnv) stabilize(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	quiet, limit := int64(10_000), int64(120_000)
	for _, a := range d.CmdArgs {
		switch a.Key {
		case "quiet":
			if len(a.Vals) > 0 {
				quiet = parseDuration(t, d, a.Vals[0])
			}
		case "max":
			limit = parseDuration(t, d, a.Vals[0])
		}
	}
	start := e.nw.Now()
	var lines []LogLine
	lastLog := start
	for int64(e.nw.Now()-lastLog) < quiet && int64(e.nw.Now()-start) < limit {
		e.nw.StepOnce()
		if l := e.nw.TakeLog(); len(l) > 0 {
			lines = append(lines, l...)
			lastLog = e.nw.Now()
		}
	}
	if !d.HasArg("silent") {
		for _, l := range lines {
			if shown(l, d.HasArg("verbose")) {
				out.WriteString(strip(l.String()) + "\n")
			}
		}
	}
	if int64(e.nw.Now()-start) >= limit {
		fmt.Fprintf(out, "not stable after %s\n", fmtMs(limit))
	}
}

func fmtMs(ms int64) string { return fmt.Sprintf("%d.%ds", ms/1000, (ms%1000)/100) }

func strip(s string) string { return strings.ReplaceAll(s, ":"+strconv.Itoa(MemPort), "") }

func short(u m.UniqueAddress) string { return strip(u.String()) }

func (e *interactionEnv) running(only []string) []*Host {
	var hs []*Host
	for _, h := range e.nw.Running() {
		if len(only) == 0 || contains(only, h.Name) {
			hs = append(hs, h)
		}
	}
	return hs
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func (e *interactionEnv) members(out *strings.Builder, only []string) {
	for _, h := range e.running(only) {
		n := h.Node
		st := n.State()
		if n.Phase() != Initialized {
			fmt.Fprintf(out, "%s: %v\n", short(n.Self()), n.Phase())
			continue
		}
		var parts []string
		unreach := st.Gossip.Reachability
		for _, mb := range st.Gossip.Members {
			p := strip(mb.String())
			if !unreach.IsReachable(mb.Address) {
				p += " unreachable"
			}
			parts = append(parts, p)
		}
		leader := "none"
		if l, ok := st.Leader(); ok {
			leader = short(l)
		}
		fmt.Fprintf(out, "%s: %s | leader=%s\n", short(n.Self()), strings.Join(parts, ", "), leader)
	}
}

func (e *interactionEnv) oldest(t *testing.T, d *datadriven.TestData, out *strings.Builder) {
	role := ""
	if ns := names(d); len(ns) > 0 {
		role = ns[0]
	}
	var clusterID string
	perCluster := d.HasArg("cluster-id")
	if perCluster {
		d.ScanArgs(t, "cluster-id", &clusterID)
	}
	for _, h := range e.running(nil) {
		if h.Node.Phase() != Initialized {
			continue
		}
		ms := h.Node.State().Gossip.Members
		var o m.Member
		var ok bool
		if perCluster {
			o, ok = m.OldestInCluster(ms, clusterID, role)
		} else {
			o, ok = m.Oldest(ms, role)
		}
		res := "none"
		if ok {
			res = short(o.Address)
		}
		fmt.Fprintf(out, "%s: %s\n", short(h.Node.Self()), res)
	}
}

func (e *interactionEnv) roleLeader(d *datadriven.TestData, out *strings.Builder) {
	role := names(d)[0]
	for _, h := range e.running(nil) {
		if h.Node.Phase() != Initialized {
			continue
		}
		res := "none"
		if l, ok := h.Node.State().RoleLeader(role); ok {
			res = short(l)
		}
		fmt.Fprintf(out, "%s: %s\n", short(h.Node.Self()), res)
	}
}

// send-stale from to uid=N: a gossip status addressed to an old incarnation.
func (e *interactionEnv) sendStale(t *testing.T, d *datadriven.TestData) {
	ns := names(d)
	var uid uint64
	d.ScanArgs(t, "uid", &uid)
	from, to := e.nw.Host(ns[0]), e.nw.Host(ns[1])
	stale := to.Cfg.Self
	stale.UID = uid
	e.nw.Send(GossipStatus{Header: Header{From: from.Cfg.Self, To: stale}, Version: from.Node.State().Gossip.Version})
}

// describe renders a message as `from -> to Type detail`.
func describe(msg Message) string {
	r := msg.Route()
	name := fmt.Sprintf("%T", msg)
	name = name[strings.LastIndex(name, ".")+1:]
	detail := ""
	switch msg := msg.(type) {
	case Welcome:
		detail = fmt.Sprintf(" members=%d", len(msg.Gossip.Members))
	case GossipEnvelope:
		var ms []string
		for _, mb := range msg.Gossip.Members {
			ms = append(ms, strip(mb.Address.String())+"="+mb.Status.String())
		}
		detail = " [" + strings.Join(ms, " ") + "]"
	case Heartbeat:
		detail = fmt.Sprintf(" seq=%d", msg.Seq)
	case HeartbeatRsp:
		detail = fmt.Sprintf(" seq=%d", msg.Seq)
	case SeedProbeResult:
		detail = fmt.Sprintf(" accepted=%v", msg.AnyAccepted)
	case JoinRefused:
		detail = fmt.Sprintf(" by=%s cause=%v", strip(msg.By.String()), msg.Cause)
	}
	return fmt.Sprintf("%s -> %s %s%s", short(r.From), short(r.To), name, detail)
}
