package chaos

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/otopcua/otopcua/tests/chaos/check"
)

// Kind is a kind of fault the run injects.
type Kind string

// Kinds of fault. Each is drawn for one ClusterId and hits one node of its
// pair (Fault.Target), except DBStop, which stops the Config DB that every
// ClusterId shares.
const (
	// Kill is a SIGKILL; the node is started again Hold after it died.
	Kill Kind = "kill"
	// Restart is a SIGKILL and a start at once at the same address: the
	// new incarnation arrives before the old one is missed.
	Restart Kind = "restart"
	// StopShort is SIGSTOP, then SIGCONT after Hold, shorter than the
	// failure detector's acceptable pause under every strategy the run
	// has (1 s under lease-majority): nothing should move.
	StopShort Kind = "stop-short"
	// StopLong is SIGSTOP, then SIGCONT after Hold (seconds): the node is
	// found silent, its peer takes over, the woken node steps down.
	StopLong Kind = "stop-long"
	// Leave is a SIGTERM (graceful leave); the node is started again Hold
	// after it exited.
	Leave Kind = "leave"
	// Failover is the operator's manual failover through the Primary's
	// admin API; the Primary leaves, exits and its supervisor starts it
	// again.
	Failover Kind = "failover"
	// Partition cuts the pair's two hosts apart with iptables for Hold:
	// both ways or only the target's packets (OneWay), dropped or refused
	// with TCP resets (Reset).
	Partition Kind = "partition"
	// DBSlow delays every chunk on one node's path to the Config DB by
	// Delay in each direction for Hold.
	DBSlow Kind = "db-slow"
	// DeviceCut cuts one node's path to its pair's device for Hold:
	// silently, or refused and reset (Reset).
	DeviceCut Kind = "device-cut"
	// DBStop stops the Config DB (PostgreSQL) for Hold: a fault of the
	// whole rig, never beside another fault.
	DBStop Kind = "db-stop"
)

// AllKinds are the kinds a full run draws from.
var AllKinds = []Kind{Kill, Restart, StopShort, StopLong, Leave, Failover, Partition, DBSlow, DeviceCut, DBStop}

// ParseKinds reads a comma-separated list of kinds ("" or "all": AllKinds).
func ParseKinds(s string) ([]Kind, error) {
	if s = strings.TrimSpace(s); s == "" || s == "all" {
		return slices.Clone(AllKinds), nil
	}
	var out []Kind
	for _, f := range strings.Split(s, ",") {
		k := Kind(strings.TrimSpace(f))
		if !slices.Contains(AllKinds, k) {
			return nil, fmt.Errorf("fault kind %q: accepted values are %s (or all)", k, kindList(AllKinds))
		}
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

func kindList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ",")
}

// CheckKind is the checker's name for a fault of kind k.
func (k Kind) CheckKind() check.FaultKind {
	switch k {
	case Kill, Restart:
		return check.FaultKill
	case StopShort, StopLong:
		return check.FaultStop
	case Leave:
		return check.FaultLeave
	case Failover:
		return check.FaultManualFailover
	case Partition:
		return check.FaultPartition
	case DBSlow:
		return check.FaultConfigDBSlow
	case DeviceCut:
		return check.FaultDeviceCut
	case DBStop:
		return check.FaultConfigDBStop
	}
	panic(fmt.Sprintf("chaos: kind %q has no checker kind", k))
}

// Role names a node of a pair by what it is when the fault is injected.
type Role int

// Roles.
const (
	Primary Role = iota
	Secondary
)

func (r Role) String() string {
	if r == Secondary {
		return "secondary"
	}
	return "primary"
}

// Fault is one planned fault.
type Fault struct {
	// At is its planned start, from the start of the schedule.
	At time.Duration
	// Cluster is the index of its ClusterId; -1 for DBStop.
	Cluster int
	Kind    Kind
	// Target is the node it hits (a partition: the node cut off, or
	// whose packets are dropped when OneWay). Failover always asks the
	// Primary.
	Target Role
	// Hold is how long it lasts: the time a killed or leaving node stays
	// down, a stop, a partition, a slow or cut path, a stopped Config DB.
	Hold time.Duration
	// Delay is DBSlow's delay in each direction.
	Delay time.Duration
	// OneWay: a partition drops only the target's packets.
	OneWay bool
	// Reset: a partition or a device cut refuses and resets connections
	// instead of dropping silently.
	Reset bool
}

func (f Fault) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%7.1fs ", f.At.Seconds())
	if f.Cluster < 0 {
		b.WriteString("rig      ")
	} else {
		fmt.Fprintf(&b, "cluster %d ", f.Cluster)
	}
	fmt.Fprintf(&b, "%-10s", f.Kind)
	if f.Cluster >= 0 && f.Kind != Failover {
		fmt.Fprintf(&b, " %s", f.Target)
	}
	if f.Hold > 0 {
		fmt.Fprintf(&b, " hold %s", f.Hold.Round(time.Millisecond))
	}
	if f.Kind == DBSlow {
		fmt.Fprintf(&b, " delay %s each way", f.Delay.Round(time.Millisecond))
	}
	if f.Kind == Partition {
		b.WriteString(map[bool]string{true: " one-way", false: " both ways"}[f.OneWay])
	}
	if f.Kind == Partition || f.Kind == DeviceCut {
		b.WriteString(map[bool]string{true: " reset", false: " drop"}[f.Reset])
	}
	return b.String()
}

// PlanOptions shape a plan.
type PlanOptions struct {
	// Clusters is the number of ClusterIds (pairs).
	Clusters int
	// Duration is the schedule's length; no fault is planned to last past
	// Duration − Tail.
	Duration time.Duration
	// Kinds are the kinds drawn from, each with the same chance (DBStop
	// with RigShare).
	Kinds []Kind
	// Gap is the range of the settle gap drawn after each fault: the time
	// from a fault's planned end to the next fault of its ClusterId. The
	// checker's restart budget and stuck-level rules judge a pair only
	// while no fault touches it, from the checker's settle margin (30 s)
	// on, so a gap shorter than that leaves them nothing to judge.
	Gap [2]time.Duration
	// First is the range of the first fault's start, per ClusterId.
	First [2]time.Duration
	// Tail is the quiet end of the schedule.
	Tail time.Duration
	// RigShare is the chance that the next fault drawn is a Config DB stop
	// (when DBStop is among Kinds and another kind is too).
	RigShare float64
}

// Planned lengths of the faults (Fault.Hold), drawn uniformly.
var holds = map[Kind][2]time.Duration{
	Kill:      {500 * time.Millisecond, 10 * time.Second},
	Restart:   {0, 0},
	StopShort: {100 * time.Millisecond, 700 * time.Millisecond},
	StopLong:  {3 * time.Second, 25 * time.Second},
	Leave:     {500 * time.Millisecond, 5 * time.Second},
	Failover:  {0, 0},
	Partition: {3 * time.Second, 30 * time.Second},
	DBSlow:    {5 * time.Second, 30 * time.Second},
	DeviceCut: {5 * time.Second, 30 * time.Second},
	DBStop:    {3 * time.Second, 30 * time.Second},
}

// slowDelay is the range of DBSlow's delay in each direction: from a
// noticeable lag to more than the DB probe's 2 s timeout round trip.
var slowDelay = [2]time.Duration{50 * time.Millisecond, 1500 * time.Millisecond}

// allowance is what a fault takes beyond its Hold in the plan: a leaving
// node's exit, a manual failover's drain, leave, exit and restart.
var allowance = map[Kind]time.Duration{Leave: 3 * time.Second, Failover: 10 * time.Second}

// Draw plans the faults of a run from seed: the same seed and options
// give the same plan. Faults of one ClusterId follow each other with a
// drawn gap; a Config DB stop waits until every ClusterId's last fault
// and gap are over, and every ClusterId waits for it and a gap. The
// result is sorted by At.
func Draw(seed int64, o PlanOptions) []Fault {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	between := func(r [2]time.Duration) time.Duration {
		if r[1] <= r[0] {
			return r[0]
		}
		return r[0] + time.Duration(rng.Int64N(int64(r[1]-r[0])))
	}
	var local []Kind
	rig := false
	for _, k := range o.Kinds {
		if k == DBStop {
			rig = true
		} else {
			local = append(local, k)
		}
	}
	end := o.Duration - o.Tail
	free := make([]time.Duration, o.Clusters)
	for i := range free {
		free[i] = between(o.First)
	}
	var out []Fault
	for len(free) > 0 {
		c := 0
		for i := range free {
			if free[i] < free[c] {
				c = i
			}
		}
		if free[c] >= end {
			break
		}
		if rig && (len(local) == 0 || rng.Float64() < o.RigShare) {
			at, hold := slices.Max(free), between(holds[DBStop])
			if at+hold > end {
				rig = false
				if len(local) == 0 {
					break
				}
				continue
			}
			out = append(out, Fault{At: at, Cluster: -1, Kind: DBStop, Hold: hold})
			for i := range free {
				free[i] = at + hold + between(o.Gap)
			}
			continue
		}
		f := Fault{At: free[c], Cluster: c, Kind: local[rng.IntN(len(local))], Target: Role(rng.IntN(2))}
		f.Hold = between(holds[f.Kind])
		switch f.Kind {
		case DBSlow:
			f.Delay = between(slowDelay)
		case Partition:
			f.OneWay = rng.Float64() < 0.3
			f.Reset = rng.Float64() < 0.4
		case DeviceCut:
			f.Reset = rng.Float64() < 0.5
		case Failover:
			f.Target = Primary
		}
		took := f.Hold + allowance[f.Kind]
		if f.At+took > end {
			free[c] = end
			continue
		}
		out = append(out, f)
		free[c] = f.At + took + between(o.Gap)
	}
	slices.SortStableFunc(out, func(a, b Fault) int { return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Cluster, b.Cluster)) })
	return out
}

// Tally counts faults by kind, in AllKinds' order ("kill 3, stop-long 1").
func Tally(fs []Fault) string {
	n := map[Kind]int{}
	for _, f := range fs {
		n[f.Kind]++
	}
	var parts []string
	for _, k := range AllKinds {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
