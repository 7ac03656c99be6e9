package demo

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// model is the demo's picture of the pair: each node's process, its own
// cluster view and its ServiceLevel as a subscribed client reads it, and
// which node is the Primary. It is a plain value changed by Run's loop
// only (never concurrently); every change returns the event lines it
// causes, and table renders the current state.
type model struct {
	nodes []*nodeState

	primary string    // the one node reading 250; "" when none
	lost    string    // the Primary that was lost, until a node reads 250 again
	lostAt  time.Time // when it was lost (the SIGKILL, or the first reading without its 250)
	double  bool      // two or more nodes read 250; reported once per occurrence
}

type nodeState struct {
	name, endpoint, addr string

	pid     int    // 0 while the process is not running
	exit    string // how the last process ended ("" before it did)
	level   Reading
	member  string // own member status from the node's view; "" unknown
	driver  bool   // the view lists the node with role driver
	oldest  string // the oldest Up driver of its ClusterId in the node's view
	hasView bool
}

func newModel(nodes []Node) *model {
	m := &model{}
	for _, n := range nodes {
		m.nodes = append(m.nodes, &nodeState{name: n.Name, endpoint: n.Endpoint(), addr: n.ClusterAddr()})
	}
	return m
}

func (m *model) node(name string) *nodeState {
	for _, n := range m.nodes {
		if n.name == name {
			return n
		}
	}
	panic(fmt.Sprintf("demo: no node %q (the model holds every node the demo started)", name))
}

// started records that name's process runs as pid.
func (m *model) started(name string, pid int) []string {
	n := m.node(name)
	n.pid = pid
	return []string{fmt.Sprintf("%s started (pid %d)", name, pid)}
}

// exited records that name's process ended (how: "exit code 3", "killed
// by SIGKILL"); restartIn > 0 when the supervisor restarts it.
func (m *model) exited(name, how string, restartIn time.Duration) []string {
	n := m.node(name)
	n.pid, n.exit = 0, how
	n.member, n.hasView, n.oldest = "", false, ""
	if restartIn > 0 {
		return []string{fmt.Sprintf("%s exited (%s); restarting in %s", name, how, restartIn)}
	}
	return []string{fmt.Sprintf("%s stopped (%s)", name, how)}
}

// killed records that the demo sent sig to name's process at now. A
// Primary killed this way is lost from that instant: the failover time
// runs from the kill.
func (m *model) killed(name string, pid int, sig string, now time.Time) []string {
	what := name
	if m.primary == name {
		what = "Primary " + name
		m.primary, m.lost, m.lostAt = "", name, now
	}
	return []string{fmt.Sprintf("%s to %s (pid %d)", sig, what, pid)}
}

// sawLevel records a ServiceLevel reading of name.
func (m *model) sawLevel(name string, r Reading, now time.Time) []string {
	n := m.node(name)
	prev := n.level
	n.level = r
	var out []string
	switch {
	case r.Known && (!prev.Known || prev.Level != r.Level):
		if prev.Known {
			out = append(out, fmt.Sprintf("%s ServiceLevel %d → %d (%s)", name, prev.Level, r.Level, Meaning(r.Level)))
		} else {
			out = append(out, fmt.Sprintf("%s ServiceLevel %d (%s)", name, r.Level, Meaning(r.Level)))
		}
	case !r.Known && prev.Known:
		out = append(out, fmt.Sprintf("%s ServiceLevel unknown: %v", name, r.Err))
	}
	return append(out, m.checkPrimary(now)...)
}

// sawView records name's view of the cluster (nil when the node did not
// answer).
func (m *model) sawView(name string, v *clusterView) []string {
	n := m.node(name)
	if v == nil {
		n.hasView = false
		return nil
	}
	prev := n.member
	n.hasView = true
	n.member = v.SelfStatus
	n.oldest = v.oldestDriver()
	n.driver = false
	if self, ok := v.self(); ok {
		n.driver = slices.Contains(self.Roles, "driver")
	}
	if n.member != prev && n.member != "" {
		return []string{fmt.Sprintf("%s member status %s", name, n.member)}
	}
	return nil
}

// checkPrimary follows the node reading 250 and reports Primary changes.
func (m *model) checkPrimary(now time.Time) []string {
	var at250 []string
	for _, n := range m.nodes {
		if n.level.Known && n.level.Level == 250 {
			at250 = append(at250, n.name)
		}
	}
	var out []string
	if m.primary != "" && !slices.Contains(at250, m.primary) {
		out = append(out, fmt.Sprintf("Primary %s lost: ServiceLevel %s", m.primary, m.node(m.primary).level))
		m.primary, m.lost, m.lostAt = "", m.primary, now
	}
	switch len(at250) {
	case 0:
		m.double = false
	case 1:
		m.double = false
		p := at250[0]
		if p == m.primary {
			break
		}
		took := fmt.Sprintf("%.1f s", now.Sub(m.lostAt).Seconds())
		switch m.lost {
		case "":
			out = append(out, fmt.Sprintf("Primary is %s", p))
		case p:
			out = append(out, fmt.Sprintf("Primary %s is back after %s", p, took))
		default:
			out = append(out, fmt.Sprintf("Primary moved from %s to %s after %s", m.lost, p, took))
		}
		m.primary, m.lost = p, ""
	default:
		if !m.double {
			out = append(out, fmt.Sprintf("WARNING: %s all read ServiceLevel 250", strings.Join(at250, ", ")))
			m.double = true
		}
	}
	return out
}

// healthySecondary reports whether a node other than the Primary reads 240.
func (m *model) healthySecondary() bool {
	for _, n := range m.nodes {
		if n.name != m.primary && n.level.Known && n.level.Level == 240 {
			return true
		}
	}
	return false
}

// Meaning names a ServiceLevel the way otopcua computes it.
func Meaning(level byte) string {
	switch level {
	case 250:
		return "healthy Primary"
	case 240:
		return "healthy Secondary"
	case 200:
		return "stale"
	case 100:
		return "Config DB unreachable"
	case 0:
		return "not a member or detached"
	case 255:
		return "not computed yet"
	}
	return "other"
}

// role is Primary or Secondary from the ServiceLevel (250, 240), else from
// the node's own view (the oldest Up driver of its ClusterId is the
// Primary), else "-".
func (n *nodeState) role() string {
	if n.level.Known {
		switch n.level.Level {
		case 250:
			return "Primary"
		case 240:
			return "Secondary"
		}
	}
	if n.hasView && n.member == "Up" && n.driver {
		if n.oldest == n.addr {
			return "Primary (by age)"
		}
		return "Secondary (by age)"
	}
	return "-"
}

// tableHeader starts every rendering of the table.
const tableHeader = "NODE  PID      MEMBER    ROLE                SERVICELEVEL  ENDPOINT"

// table renders the live table: one row per node, then who is Primary.
func (m *model) table() string {
	var b strings.Builder
	b.WriteString(tableHeader + "\n")
	for _, n := range m.nodes {
		pid := "-"
		if n.pid != 0 {
			pid = fmt.Sprint(n.pid)
		}
		member := "-"
		switch {
		case n.pid == 0 && n.exit != "":
			member = "(exited)"
		case n.hasView && n.member != "":
			member = n.member
		}
		level := "-"
		if n.level.Known {
			level = fmt.Sprint(n.level.Level)
		}
		fmt.Fprintf(&b, "%-5s %-8s %-9s %-19s %-13s %s\n", n.name, pid, member, n.role(), level, n.endpoint)
	}
	switch {
	case m.primary != "":
		fmt.Fprintf(&b, "Primary: %s (%s)\n", m.primary, m.node(m.primary).endpoint)
	case m.lost != "":
		fmt.Fprintf(&b, "Primary: none since %s was lost\n", m.lost)
	default:
		b.WriteString("Primary: none yet\n")
	}
	return b.String()
}
