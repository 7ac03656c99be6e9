package upgrade

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/chaos/check"
	"github.com/otopcua/otopcua/tests/failover"
	"github.com/otopcua/otopcua/tests/procs"
)

// record is what the world outside the nodes saw, in the checker's terms
// (check.Run): the device's write log with each write's node, the process
// events, the acknowledged writes, the client's failovers and the faults
// the test made. Safe for concurrent use (mu).
type record struct {
	start time.Time

	mu        sync.Mutex
	writes    []check.DeviceWrite    // mu must be held.
	unplaced  []string               // device writes whose node was not found; mu must be held.
	processes []check.ProcessEvent   // mu must be held.
	acks      []check.AckedWrite     // mu must be held.
	failovers []check.ClientFailover // mu must be held.
	faults    []check.Fault          // mu must be held.
}

func newRecord() *record { return &record{start: time.Now()} }

func (r *record) process(node string, kind check.ProcessKind, code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processes = append(r.processes, check.ProcessEvent{At: time.Now(), Source: "test", Node: node, Kind: kind, Code: code})
}

func (r *record) fault(f check.Fault) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults = append(r.faults, f)
}

func (r *record) ack(a check.AckedWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

func (r *record) failover(f check.ClientFailover) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failovers = append(r.failovers, f)
}

// write logs one device write; err says why its node was not found.
func (r *record) write(w check.DeviceWrite, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.unplaced = append(r.unplaced, fmt.Sprintf("%s=%s at %s: %v", w.Address, w.Value, w.At.Format("15:04:05.000"), err))
		return
	}
	r.writes = append(r.writes, w)
}

// landings are the device writes of value, in time order.
func (r *record) landings(value string) []check.DeviceWrite {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []check.DeviceWrite
	for _, w := range r.writes {
		if w.Value == value {
			out = append(out, w)
		}
	}
	return out
}

// unplacedWrites are the device writes whose node was not found.
func (r *record) unplacedWrites() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.unplaced)
}

// run is the record as the checker reads it, with the sampler's rounds
// and the alarm_history rows. The pair runs lease-majority, so every
// invariant holds throughout.
func (r *record) run(rounds []failover.Round, alarms []check.AlarmRow, tags map[string]check.Tag) check.Run {
	r.mu.Lock()
	defer r.mu.Unlock()
	var levels []check.LevelSample
	for _, rd := range rounds {
		for _, o := range rd.Obs {
			levels = append(levels, check.LevelSample{At: rd.At, Source: "sampler", Node: o.Node, ClusterID: o.ClusterID, Level: o.Level, Answered: o.OK})
		}
	}
	return check.Run{
		Start: r.start,
		Clusters: []check.Cluster{{ID: clusterID, Nodes: []string{"a", "b"}, Downing: check.LeaseMajority,
			Devices: []string{device}, Tags: tags}},
		Writes: slices.Clone(r.writes), Levels: levels, Processes: slices.Clone(r.processes), Acks: slices.Clone(r.acks),
		Failovers: slices.Clone(r.failovers), Alarms: alarms, Faults: slices.Clone(r.faults),
	}
}

// writers tells which node's connection made a device write: the device
// reports the client address of the connection, and the node is the one
// whose process holds that connection (procs.ConnOwner), looked up while
// the connection is open and remembered with that process's pid; a node
// whose pid changed since (it restarted) is looked up again, since a new
// process may get a port its predecessor had. Safe for concurrent use
// (mu).
type writers struct {
	dev   string // the device's address
	mu    sync.Mutex
	nodes map[string]*procs.Node // mu must be held.
	known map[string]owner       // client address → its node; mu must be held.
}

type owner struct {
	node string
	pid  int
}

func newWriters(dev string) *writers {
	return &writers{dev: dev, nodes: map[string]*procs.Node{}, known: map[string]owner{}}
}

func (w *writers) add(name string, n *procs.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nodes[name] = n
}

// of returns the node whose connection from client is open to the device.
func (w *writers) of(client string) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pids := map[int]string{}
	for name, n := range w.nodes {
		pids[n.PID()] = name
	}
	if o, ok := w.known[client]; ok && pids[o.pid] == o.node {
		return o.node, nil
	}
	pid, err := procs.ConnOwner(client, w.dev, slices.Collect(maps.Keys(pids))...)
	if err != nil {
		return "", err
	}
	w.known[client] = owner{node: pids[pid], pid: pid}
	return pids[pid], nil
}

// onWrite is the device's OnWrite: every write of the setpoint, with its
// node. It runs with the device's lock held; a connection not seen before
// costs one look through /proc.
func (r *rig) onWrite(w fielddevice.Write) {
	if w.Table != fielddevice.Holding || w.Address != setpointAddr || len(w.Words) == 0 {
		return
	}
	at := time.Now()
	node, err := r.writers.of(w.Client)
	r.rec.write(check.DeviceWrite{At: at, Source: "device, connection " + w.Client, Device: device, Address: setpointRegister,
		Value: strconv.Itoa(int(int16(w.Words[0]))), Writer: node}, err)
}
