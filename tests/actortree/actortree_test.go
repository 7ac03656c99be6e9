// Package actortree_test runs real `otopcua host` processes and checks the
// node's supervision tree: GET /api/actors against the membership view,
// and the test hook's faults in the publish actor, the DB probe and a
// peer-probe child (restart, ServiceLevel published again, counted; past
// the limit the process exits 1 naming the actor).
package actortree_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/otopcua/otopcua/host"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	publishPath   = "node/opcua-publish"
	dbProbePath   = "node/db-health-probe"
	supervisorDir = "node/peer-probe-supervisor"
	managerPath   = "node/redundancy-state-manager"
	singletonPath = "node/redundancy-state-manager/redundancy-state"
	maxRestarts   = 5 // actors.DefaultMaxRestarts
)

func pair(t *testing.T) (a, b *procs.Node) {
	t.Helper()
	pa, pb := procs.NewPorts(t), procs.NewPorts(t)
	db := "file:" + filepath.Join(t.TempDir(), "config.db")
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", pa.Cluster), fmt.Sprintf("127.0.0.1:%d", pb.Cluster)}
	mk := func(name string, p procs.Ports, peer string) map[string]any {
		cfg := procs.BaseConfig(name, p)
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + peer + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": db}
		return cfg
	}
	hooks := host.EnvTestHooks + "=1"
	a = procs.Start(t, "a", mk("a", pa, "b"), hooks)
	a.WaitReady(30 * time.Second)
	b = procs.Start(t, "b", mk("b", pb, "a"), hooks)
	b.WaitReady(30 * time.Second)
	runtimeLevels(t, a)
	runtimeLevels(t, b)
	return a, b
}

// runtimeLevels hands n's ServiceLevel to its redundancy runtime: with the
// test hooks on, the hook owns it until told so.
func runtimeLevels(t *testing.T, n *procs.Node) {
	t.Helper()
	if _, err := n.Post("/debug/service-level?level=runtime"); err != nil {
		t.Fatalf("%s: %v", n.Name, err)
	}
}

func actorsOf(n *procs.Node) (host.ActorsReport, error) {
	var rep host.ActorsReport
	body, err := n.Get("/api/actors")
	if err != nil {
		return rep, err
	}
	return rep, json.Unmarshal([]byte(body), &rep)
}

func find(rep host.ActorsReport, path string) (host.ActorEntry, bool) {
	for _, a := range rep.Actors {
		if a.Path == path {
			return a, true
		}
	}
	return host.ActorEntry{}, false
}

// peerChild is the path of n's probe of peer.
func peerChild(peer *procs.Node) string { return supervisorDir + "/peer-" + peer.ClusterAddr() }

// settled waits until both nodes list every component, each probing the
// other, and the singleton runs on exactly one node.
func settled(t *testing.T, a, b *procs.Node) {
	t.Helper()
	procs.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		for _, n := range []struct{ self, peer *procs.Node }{{a, b}, {b, a}} {
			rep, err := actorsOf(n.self)
			if err != nil {
				return err
			}
			for _, p := range []string{"node", publishPath, dbProbePath, supervisorDir, peerChild(n.peer), managerPath,
				"node/driver-host", "node/alarm-host", "otopcua-cluster", "otopcua-pubsub"} {
				if _, ok := find(rep, p); !ok {
					return fmt.Errorf("%s lists no %s: %v", n.self.Name, p, paths(rep))
				}
			}
		}
		return nil
	})
}

func paths(rep host.ActorsReport) []string {
	var out []string
	for _, a := range rep.Actors {
		out = append(out, a.Path)
	}
	return out
}

// TestActorsMatchTheMembership: /api/actors on a running pair lists the
// reference's components on both nodes, the redundancy-state singleton
// only on the oldest admin of the membership view, and after a SIGTERM of
// that node on the survivor.
func TestActorsMatchTheMembership(t *testing.T) {
	t.Parallel()
	a, b := pair(t)
	settled(t, a, b)
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		view, err := a.Members()
		if err != nil {
			return err
		}
		oldest, ok := view.OldestUp("admin", "")
		if !ok || len(view.UpAddresses()) != 2 {
			return fmt.Errorf("view %s: want two Up members", view)
		}
		for _, n := range []*procs.Node{a, b} {
			rep, err := actorsOf(n)
			if err != nil {
				return err
			}
			_, has := find(rep, singletonPath)
			if want := n.ClusterAddr() == oldest.Address; has != want {
				return fmt.Errorf("%s (oldest admin %s) lists the singleton: %v, want %v", n.Name, oldest.Address, has, want)
			}
		}
		return nil
	})
	rep, err := actorsOf(a)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NodeID != a.ClusterAddr() {
		t.Fatalf("report of %s names node %s", a.ClusterAddr(), rep.NodeID)
	}
	for _, e := range rep.Actors {
		if e.StartedAt.IsZero() || e.Kind == "" || (e.Supervisor != "tree" && e.Supervisor != "own") {
			t.Fatalf("incomplete entry %+v", e)
		}
	}
	out := runStatus(t, a)
	for _, want := range []string{"node " + a.ClusterAddr(), "opcua-publish", "OpcUaPublishActor", "peer-" + b.ClusterAddr(), "redundancy-state"} {
		if !strings.Contains(out, want) {
			t.Fatalf("otopcua status lacks %q:\n%s", want, out)
		}
	}

	// The singleton moves with the oldest: a SIGTERM of a hands it to b.
	a.Signal(syscall.SIGTERM)
	if code := a.WaitExit(30 * time.Second); code != 0 {
		t.Fatalf("a exited %d", code)
	}
	procs.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		rep, err := actorsOf(b)
		if err != nil {
			return err
		}
		if _, ok := find(rep, singletonPath); !ok {
			return fmt.Errorf("the survivor does not run the singleton: %v", paths(rep))
		}
		return nil
	})
}

// levels is nil when a reads 250 and b 240.
func levels(a, b *procs.Node) error {
	la, err := procs.ReadServiceLevel(a.Endpoint())
	if err != nil {
		return err
	}
	lb, err := procs.ReadServiceLevel(b.Endpoint())
	if err != nil {
		return err
	}
	if la != 250 || lb != 240 {
		return fmt.Errorf("levels a=%d b=%d, want 250/240", la, lb)
	}
	return nil
}

// healthy waits for a at 250 and b at 240.
func healthy(t *testing.T, a, b *procs.Node) {
	t.Helper()
	procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error { return levels(a, b) })
}

// runStatus runs `otopcua status --url` against n.
func runStatus(t *testing.T, n *procs.Node) string {
	t.Helper()
	out, err := exec.Command(procs.Binary(t), "status", "--url", n.HTTP()).CombinedOutput()
	if err != nil {
		t.Fatalf("otopcua status: %v\n%s", err, out)
	}
	return string(out)
}

var restartsLine = regexp.MustCompile(`(?m)^otopcua_actor_restarts_total\{([^}]*)\} (\d+)`)

// restartsMetric is otopcua_actor_restarts_total of actor on n's /metrics.
func restartsMetric(n *procs.Node, actor string) (int, error) {
	body, err := n.Get("/metrics")
	if err != nil {
		return 0, err
	}
	for _, m := range restartsLine.FindAllStringSubmatch(body, -1) {
		if strings.Contains(m[1], `actor="`+actor+`"`) {
			return strconv.Atoi(m[2])
		}
	}
	return 0, nil
}

// fault makes path panic on n and waits until the restart shows in
// /api/actors and /metrics.
func fault(t *testing.T, n *procs.Node, path string, restarts int) {
	t.Helper()
	if _, err := n.Post("/debug/actor-fault?actor=" + path); err != nil {
		t.Fatalf("fault %s on %s: %v", path, n.Name, err)
	}
	procs.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		rep, err := actorsOf(n)
		if err != nil {
			return err
		}
		e, ok := find(rep, path)
		if !ok || e.Restarts != restarts {
			return fmt.Errorf("%s on %s: %+v (listed %v), want %d restarts", path, n.Name, e, ok, restarts)
		}
		if m, err := restartsMetric(n, path); err != nil || m != restarts {
			return fmt.Errorf("otopcua_actor_restarts_total{actor=%q} = %d (%v), want %d", path, m, err, restarts)
		}
		return nil
	})
}

// past faults path until the tree gives up: the process exits 1 and its
// log names the actor; then the node is started again.
func past(t *testing.T, n *procs.Node, path string, already int) {
	t.Helper()
	for i := already + 1; i <= maxRestarts; i++ {
		fault(t, n, path, i)
	}
	if _, err := n.Post("/debug/actor-fault?actor=" + path); err != nil {
		t.Fatalf("last fault of %s: %v", path, err)
	}
	if code := n.WaitExit(60 * time.Second); code != 1 {
		t.Fatalf("%s exited %d after %s failed past its limit, want 1\n%s", n.Name, code, path, n.Log())
	}
	log := n.Log()
	for _, want := range []string{`"msg":"actor failed past its restart limit: ending the node","actor":"` + path + `"`,
		`"msg":"an actor failed past its restart limit: leaving the cluster and exiting with code 1 for the service supervisor to restart this node","actor":"` + path + `"`} {
		if !strings.Contains(log, want) {
			t.Fatalf("%s's log lacks %s\n%s", n.Name, want, log)
		}
	}
}

// TestFaultsRestartOneActor: on the Secondary of a pair, a panic in the
// publish actor, in the DB probe and in its peer-probe child each restart
// that actor alone (counted, a Warning naming it); the node stays up and
// its ServiceLevel is computed and published again at once (within one
// HealthTick); the pair keeps 250/240. Faults past the limit end the
// process with exit 1 and a log line naming the actor, for each of the
// three.
func TestFaultsRestartOneActor(t *testing.T) {
	t.Parallel()
	a, b := pair(t)
	settled(t, a, b)
	healthy(t, a, b)
	// b is the youngest: the Secondary.
	before, err := actorsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	sup, _ := find(before, supervisorDir)

	computed := strings.Count(b.Log(), `"why":"restart"`)
	fault(t, b, publishPath, 1)
	procs.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if n := strings.Count(b.Log(), `"why":"restart"`); n <= computed {
			return fmt.Errorf("no ServiceLevel computed after the publish actor's restart")
		}
		return nil
	})
	if !strings.Contains(b.Log(), `"msg":"actor failed; restarting it","actor":"`+publishPath+`"`) {
		t.Fatalf("no Warning naming %s", publishPath)
	}

	fault(t, b, dbProbePath, 1)
	fault(t, b, peerChild(a), 1)
	after, err := actorsOf(b)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := find(after, supervisorDir); !s.StartedAt.Equal(sup.StartedAt) || s.Restarts != 0 {
		t.Fatalf("the peer-probe supervisor restarted with its child: %+v, before %+v", s, sup)
	}
	if !b.Alive() || !a.Alive() {
		t.Fatal("a node ended after one fault")
	}
	procs.Holds(t, 6*time.Second, 500*time.Millisecond, func() error { return levels(a, b) })

	for _, p := range []struct {
		path    string
		already int
	}{{dbProbePath, 1}, {peerChild(a), 0}, {publishPath, 0}} { // b's restart starts the counts over
		past(t, b, p.path, p.already)
		b.Restart()
		b.WaitReady(30 * time.Second)
		runtimeLevels(t, b)
		settled(t, a, b)
		healthy(t, a, b)
	}
	if !a.Alive() {
		t.Fatal("the Primary ended while the Secondary's actors failed")
	}
}
