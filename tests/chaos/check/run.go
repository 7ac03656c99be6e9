package check

import "time"

// Downing strategies a ClusterId may run (Cluster.Downing).
const (
	LeaseMajority = "lease-majority"
	AutoDown      = "auto-down"
)

// ServiceLevel bytes the checker gives a meaning (DESIGN.md, Redundancy).
const (
	LevelPrimary   byte = 250 // healthy Primary
	LevelSecondary byte = 240 // healthy Secondary
	LevelStale     byte = 200 // lowest level of the Healthy band
	LevelUnset     byte = 255 // not yet computed
	LevelDetached  byte = 0   // not a member, or no driver role
)

// Run is everything the outside world saw during one chaos run, and the
// faults the run injected. Each list may be in any order.
type Run struct {
	Seed     int64     // the run's seed, printed with every violation
	Start    time.Time // time zero of the timelines; zero = the first ServiceLevel sample
	Clusters []Cluster
	Params   Params

	Writes    []DeviceWrite
	Levels    []LevelSample
	Processes []ProcessEvent
	Acks      []AckedWrite
	Failovers []ClientFailover
	Alarms    []AlarmRow
	Toggles   []Toggle
	Faults    []Fault
	// End is when the run stopped observing: toggles later than
	// Params.HistoryGap before it are not judged. Zero = the last
	// observation.
	End time.Time
}

// Toggle is one move of a device register across an alarm's threshold
// that the run made: the Primary of ClusterID is to store a transition for
// it (or for a later toggle, when failover windows swallow some).
type Toggle struct {
	At        time.Time
	Source    string
	ClusterID string
}

// Cluster is the configuration of one ClusterId as the run deployed it.
type Cluster struct {
	ID      string
	Nodes   []string // the harness's node names
	Downing string   // LeaseMajority or AutoDown
	// RestartBudget is how long a restarted node may take to answer
	// ServiceLevel 240 or 250 again. Zero = DefaultRestartBudget.
	RestartBudget time.Duration
	Devices       []string       // the devices its Primary writes to
	Tags          map[string]Tag // OPC UA NodeId (as the client logs it) → where a write to it lands
}

// Tag is where a client write to one OPC UA node lands.
type Tag struct {
	Device  string
	Address string // register as the device's write log prints it; "" = any
}

// DeviceWrite is one line of a device's write log.
type DeviceWrite struct {
	At      time.Time
	Source  string // the log it was read from, e.g. "plc-a.log:17"
	Device  string
	Address string // register, e.g. "40001"
	Value   string // as the device log prints it
	Writer  string // node whose connection wrote, as the log records it
}

// LevelSample is one read of a node's Server.ServiceLevel by a sampler.
type LevelSample struct {
	At        time.Time
	Source    string // the sampler, e.g. "sampler b"
	Node      string
	ClusterID string
	Level     byte
	Answered  bool // false: the read got no answer (stopped, cut off, gone)
}

// ProcessKind is what happened to a node's process.
type ProcessKind int

// Kinds of ProcessEvent.
const (
	Started   ProcessKind = iota + 1
	Exited                // ended by itself; ProcessEvent.Code holds the exit code
	Killed                // SIGKILL by the chaos run
	Stopped               // SIGSTOP
	Continued             // SIGCONT
)

// ProcessEvent is one event of a node's OS process, as its parent saw it.
type ProcessEvent struct {
	At     time.Time
	Source string
	Node   string
	Kind   ProcessKind
	Code   int // exit code, for Exited
}

// AckedWrite is a write the client's log shows acknowledged (Good).
type AckedWrite struct {
	At     time.Time
	Source string // e.g. "client cl1.log:88"
	NodeID string // OPC UA NodeId written
	Value  string // rendered as the device log renders it
	Server string // node that acknowledged it
}

// ClientFailover is a failover event in the client's log.
type ClientFailover struct {
	At       time.Time
	Source   string
	From, To string // node names
	Reason   string
}

// AlarmRow is one row of the Config DB's alarm_history.
type AlarmRow struct {
	At           time.Time // the row's event time
	Source       string
	ClusterID    string
	Condition    string // the alarm
	TransitionID string
}

// FaultKind is a kind of fault the chaos run injects.
type FaultKind int

// Kinds of Fault.
const (
	FaultKill           FaultKind = iota + 1 // SIGKILL; the window ends at the restart
	FaultStop                                // SIGSTOP … SIGCONT
	FaultPartition                           // iptables between hosts; see OneWay, Reset
	FaultConfigDBStop                        // the Config DB stopped … started
	FaultConfigDBSlow                        // the Config DB answers slowly (proxy)
	FaultDeviceCut                           // the path between nodes and a device cut
	FaultManualFailover                      // the operator's failover command
	FaultLeave                               // SIGTERM: graceful leave
)

// Fault is one fault window the chaos run injected.
type Fault struct {
	Kind FaultKind
	// Targets are node or device names. None: it touches every ClusterId
	// (the Config DB's faults). A partition cuts the first target from
	// the others.
	Targets    []string
	Start, End time.Time // End = Start for a fault with nothing to undo
	OneWay     bool      // partition: only traffic from the first target is cut
	Reset      bool      // partition: REJECT with a TCP reset instead of DROP
}

// Params tune the rules. A zero field means its default, except
// OverlapWindow, whose default is zero.
type Params struct {
	// OverlapWindow is how long two writers may interleave on one device
	// before it is a violation. Default 0: never.
	OverlapWindow time.Duration
	// Settle is how long after a fault ends its effects are still
	// expected (a partition's two Primaries under auto-down, a node at 0
	// while its pair recovers). Default 30 s, the redundancy freshness
	// window.
	Settle time.Duration
	// AckTolerance is how long before its acknowledgement an acknowledged
	// write may land on the device. Default 5 s.
	AckTolerance time.Duration
	// StuckLimit is how long a node may stay at 255 or below 200 while
	// its pair is healthy. Default 10 s (two HealthTicks).
	StuckLimit time.Duration
	// Context is how far before and after a violation its timeline
	// reaches. Default 5 s.
	Context time.Duration
	// HistoryGap is how long the run's alarm toggles may go without a
	// transition in alarm_history (a failover window swallows the toggles
	// it spans; a Primary that drains nothing swallows them all). Default
	// 60 s.
	HistoryGap time.Duration
}

// Defaults of Params and Cluster.
const (
	DefaultSettle        = 30 * time.Second
	DefaultAckTolerance  = 5 * time.Second
	DefaultStuckLimit    = 10 * time.Second
	DefaultContext       = 5 * time.Second
	DefaultRestartBudget = 30 * time.Second
	DefaultHistoryGap    = 60 * time.Second
)

func (p Params) withDefaults() Params {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&p.Settle, DefaultSettle)
	def(&p.AckTolerance, DefaultAckTolerance)
	def(&p.StuckLimit, DefaultStuckLimit)
	def(&p.Context, DefaultContext)
	def(&p.HistoryGap, DefaultHistoryGap)
	return p
}
