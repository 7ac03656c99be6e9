package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configure Run.
type Options struct {
	// Executable is the otopcua binary each node runs as
	// `Executable host --config <file>` (cmd/otopcua passes os.Executable()).
	// Required.
	Executable string

	// Dir holds the generated configurations, the shared SQLite Config DB
	// and the nodes' logs, and is kept afterwards. Default "": a new
	// temporary directory, removed when the demo ends.
	Dir string

	// KillPrimaryAfter, when positive, sends SIGKILL once to the node that
	// is Primary this long after start, or, if the pair is not healthy by
	// then (one node at 250, another at 240), as soon as it is. Default 0:
	// never.
	KillPrimaryAfter time.Duration

	// RestartAfter is the back-off before a node that exited is started
	// again; it doubles (up to 10 s) while a node keeps exiting within 5 s
	// of starting. Default 1 s.
	RestartAfter time.Duration

	// StopGrace is how long a node may take to stop after SIGTERM before
	// it is killed. Default 5 s.
	StopGrace time.Duration

	// Out receives the output: endpoint URLs, one line per event and the
	// live table. Required.
	Out io.Writer

	// Redraw redraws the table in place with ANSI escape sequences (set it
	// when Out is a terminal). Otherwise each change of the table is
	// printed again, below the events that caused it.
	Redraw bool

	// Environ is the environment the nodes start with; the variables that
	// would override the generated configuration (OTOPCUA_<SECTION>__<KEY>,
	// OTOPCUA_ROLES) are removed. Default os.Environ().
	Environ []string

	// Now is the clock of the event lines and the failover times. Default
	// time.Now.
	Now func() time.Time
}

// pollEvery is how often the demo reads each node's cluster view.
const pollEvery = 500 * time.Millisecond

// nodeNames are the demo's two nodes; the first is the first seed.
var nodeNames = []string{"a", "b"}

// Run starts the pair, prints its table until ctx is cancelled (SIGINT or
// SIGTERM in cmd/otopcua), then stops both nodes and returns once no
// process it started is left.
func Run(ctx context.Context, o Options) error {
	if o.Executable == "" || o.Out == nil {
		panic("demo.Run: Options.Executable and Options.Out are required")
	}
	if !supported {
		return errors.New("otopcua demo: needs a Unix system (process groups and signals)")
	}
	if o.RestartAfter <= 0 {
		o.RestartAfter = time.Second
	}
	if o.StopGrace <= 0 {
		o.StopGrace = 5 * time.Second
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dir := o.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "otopcua-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	nodes, err := writeConfigs(dir)
	if err != nil {
		return err
	}
	devAddr, stopDevices, err := startDevices(ctx, dir)
	if err != nil {
		return fmt.Errorf("otopcua demo: field devices: %w", err)
	}
	defer stopDevices()
	token, err := viewerToken(ctx, dir)
	if err != nil {
		return fmt.Errorf("otopcua demo: the Viewer that reads the nodes: %w", err)
	}
	d := newRunner(o, dir, nodes)
	d.devAddr, d.token = devAddr, token
	return d.run(ctx)
}

// writeConfigs chooses the ports and writes each node's appsettings.json.
func writeConfigs(dir string) ([]Node, error) {
	ports, err := freePorts(3 * len(nodeNames))
	if err != nil {
		return nil, err
	}
	var nodes []Node
	for i, name := range nodeNames {
		nodes = append(nodes, Node{
			Name:       name,
			Ports:      NodePorts{Cluster: ports[3*i], OpcUa: ports[3*i+1], HTTP: ports[3*i+2]},
			ConfigPath: filepath.Join(dir, name+".appsettings.json"),
			LogPath:    filepath.Join(dir, name+".log"),
		})
	}
	for i, n := range nodes {
		b, err := marshalConfig(NodeConfig(dir, nodes, i))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(n.ConfigPath, b, 0o644); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// runner is one run of the demo. Its model and output belong to run's
// loop; every other goroutine hands changes to the loop through updates.
type runner struct {
	o     Options
	dir   string
	nodes []Node
	kids  map[string]*child

	model   *model
	updates chan func(now time.Time) []string
	quit    chan struct{} // closed when the loop stops reading updates

	devAddr string // the demo's Modbus TCP device
	token   string // ViewerName's API token: the nodes' reports need it

	drawn   int              // lines of the table on screen (Redraw)
	last    string           // the table as last printed
	pending <-chan time.Time // a changed table waits for a pause (no Redraw)

	writesDone bool // demoWrites has finished; the kill waits for it
}

func newRunner(o Options, dir string, nodes []Node) *runner {
	r := &runner{o: o, dir: dir, nodes: nodes, kids: map[string]*child{}, model: newModel(nodes),
		updates: make(chan func(time.Time) []string, 256), quit: make(chan struct{})}
	env := childEnv(o.Environ)
	for _, n := range nodes {
		name := n.Name
		r.kids[name] = &child{
			name: name, argv: []string{o.Executable, "host", "--config", n.ConfigPath},
			dir: dir, env: env, logPath: n.LogPath,
			restartAfter: o.RestartAfter, maxBackoff: 10 * time.Second, grace: o.StopGrace,
			onStart: func(pid int) {
				r.send(func(time.Time) []string { return r.model.started(name, pid) })
			},
			onExit: func(how string, restartIn time.Duration) {
				r.send(func(time.Time) []string { return r.model.exited(name, how, restartIn) })
			},
		}
	}
	return r
}

// send hands a change to the loop; it gives up once the loop has stopped.
func (r *runner) send(f func(time.Time) []string) {
	select {
	case r.updates <- f:
	case <-r.quit:
	}
}

func (r *runner) run(ctx context.Context) error {
	r.header()

	kidsCtx, stopKids := context.WithCancel(context.Background())
	defer stopKids()
	var kids sync.WaitGroup
	for _, n := range r.nodes {
		kids.Add(1)
		go func() {
			defer kids.Done()
			r.kids[n.Name].run(kidsCtx)
		}()
	}
	kidsDone := make(chan struct{})
	go func() {
		kids.Wait()
		close(kidsDone)
	}()

	watchCtx, stopWatch := context.WithCancel(context.Background())
	var watchers sync.WaitGroup
	for _, n := range r.nodes {
		name := n.Name
		w := Watch(watchCtx, n.Endpoint(), WatchOptions{}, func(rd Reading) {
			r.send(func(now time.Time) []string { return r.model.sawLevel(name, rd, now) })
		})
		watchers.Add(2)
		go func() {
			defer watchers.Done()
			<-watchCtx.Done()
			w.Close()
		}()
		go func() {
			defer watchers.Done()
			r.poll(watchCtx, name, n.HTTP())
		}()
	}
	watchers.Add(1)
	go func() {
		defer watchers.Done()
		r.demoWrites(watchCtx)
	}()
	defer func() {
		close(r.quit)
		stopWatch()
		watchers.Wait()
	}()

	var killAt <-chan time.Time
	if r.o.KillPrimaryAfter > 0 {
		killAt = time.After(r.o.KillPrimaryAfter)
	}
	done := ctx.Done()
	for {
		select {
		case f := <-r.updates:
			r.print(f(r.o.Now()))
		case <-r.pending:
			r.flush()
		case <-killAt:
			killAt = r.killPrimary()
		case <-done:
			done, killAt = nil, nil
			r.print([]string{"stopping both nodes (SIGTERM, SIGKILL after " + r.o.StopGrace.String() + ")"})
			stopKids()
		case <-kidsDone:
			// Drain what the supervisors reported last.
			for {
				select {
				case f := <-r.updates:
					r.print(f(r.o.Now()))
					continue
				default:
				}
				break
			}
			r.flush()
			r.print([]string{"stopped: no node process is left"})
			return nil
		}
	}
}

// killPrimary sends SIGKILL to the Primary, or tries again shortly when
// there is none yet; it returns the next attempt's timer (nil when done).
func (r *runner) killPrimary() <-chan time.Time {
	p := r.model.primary
	if p == "" || !r.model.healthySecondary() || !r.writesDone {
		return time.After(200 * time.Millisecond)
	}
	r.flush() // the table the kill interrupts comes first
	pid, err := r.kids[p].signal(sigKill)
	if err != nil {
		return time.After(200 * time.Millisecond)
	}
	r.print(r.model.killed(p, pid, "SIGKILL", r.o.Now()))
	return nil
}

// poll reads name's cluster view every pollEvery until ctx is done.
func (r *runner) poll(ctx context.Context, name, base string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		v, err := fetchView(ctx, client, base, r.token, time.Second)
		if err != nil {
			v = nil
		}
		r.send(func(time.Time) []string { return r.model.sawView(name, v) })
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *runner) header() {
	var b strings.Builder
	fmt.Fprintf(&b, "otopcua demo: a redundant pair on loopback (ClusterId %s), files in %s\n", ClusterID, r.dir)
	fmt.Fprintf(&b, "Config DB (SQLite, shared): %s\n", filepath.Join(r.dir, "config.db"))
	for _, n := range r.nodes {
		fmt.Fprintf(&b, "  %s  OPC UA %s  HTTP %s%s  cluster %s  log %s\n",
			n.Name, n.Endpoint(), n.HTTP(), membersPath, n.ClusterAddr(), n.LogPath)
	}
	fmt.Fprintf(&b, "The nodes' reports need a Viewer: %s's API token is %s (curl -H 'Authorization: Bearer %s' %s%s)\n",
		ViewerName, r.token, r.token, r.nodes[0].HTTP(), membersPath)
	b.WriteString("ServiceLevel: 250 healthy Primary, 240 healthy Secondary, 200 stale, 100 Config DB unreachable, 0 not a member, 255 not computed yet\n")
	if r.o.KillPrimaryAfter > 0 {
		fmt.Fprintf(&b, "The Primary gets SIGKILL after %s.\n", r.o.KillPrimaryAfter)
	}
	b.WriteString("A node that exits is restarted. Ctrl-C stops both nodes.\n")
	var urls []string
	for _, n := range r.nodes {
		urls = append(urls, n.Endpoint())
	}
	fmt.Fprintf(&b, "Follow the pair from another terminal: go run ./cmd/otopcua client subscribe i=2267 -F %s\n", strings.Join(urls, ","))
	fmt.Fprintf(&b, "Field devices: press1, a Modbus TCP device at %s (Setpoint writable, Speed moving), and sim (Ramp, Sine), served on both nodes as ns=2;s=<device>/<tag>:\n", r.devAddr)
	fmt.Fprintf(&b, "  go run ./cmd/otopcua client subscribe 'ns=2;s=%s' 'ns=2;s=%s' -F %s\n", demoRamp, demoSpeed, strings.Join(urls, ","))
	b.WriteString("Once the pair is healthy the demo writes press1/Setpoint through the Secondary in the default optimistic mode (denied),\n")
	b.WriteString("restarts the Secondary with OpcUa:WriteMode forward and writes through it again (forwarded to the Primary, lands),\n")
	b.WriteString("then writes through the Primary (lands).\n\n")
	io.WriteString(r.o.Out, b.String())
}

// tableQuiet: without Redraw, a changed table is printed once the changes
// have paused this long, so a burst of events is followed by one table.
const tableQuiet = 300 * time.Millisecond

// print writes event lines and the table: with Redraw, the table is
// redrawn below the new lines at once; otherwise a changed table is
// printed again after tableQuiet (see flush).
func (r *runner) print(events []string) {
	var b strings.Builder
	if r.o.Redraw && r.drawn > 0 && len(events) > 0 {
		fmt.Fprintf(&b, "\r\x1b[%dA\x1b[J", r.drawn)
		r.drawn, r.last = 0, ""
	}
	stamp := r.o.Now().Format("15:04:05.000")
	for _, e := range events {
		b.WriteString(stamp + " " + e + "\n")
	}
	io.WriteString(r.o.Out, b.String())
	if r.o.Redraw {
		r.flush()
	} else if r.pending == nil && r.model.table() != r.last {
		r.pending = time.After(tableQuiet)
	}
}

// flush prints the table if it changed since it was last printed.
func (r *runner) flush() {
	r.pending = nil
	table := r.model.table()
	if table == r.last {
		return
	}
	var b strings.Builder
	if r.o.Redraw {
		if r.drawn > 0 {
			fmt.Fprintf(&b, "\r\x1b[%dA\x1b[J", r.drawn)
		}
		b.WriteString(table)
	} else {
		b.WriteString("\n" + table + "\n")
	}
	r.drawn = strings.Count(table, "\n")
	r.last = table
	io.WriteString(r.o.Out, b.String())
}

func itoa(i int) string { return strconv.Itoa(i) }
