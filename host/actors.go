package host

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/daemon"
	"github.com/otopcua/otopcua/cluster/pubsub"
)

// RootActorName is the root of the node's supervision tree: every runtime
// component's actor path starts with it (node/opcua-publish, ...).
const RootActorName = "node"

// startTree starts the node's supervision tree on sys. A component that
// fails past its restart limit is reported on tree.Failed(); Run then
// stops the node with exit code 1 so the service supervisor restarts it.
func startTree(sys *actors.System, faults bool, meter metric.Meter, logger *slog.Logger) (*actors.Tree, error) {
	return actors.NewTree(sys, actors.TreeOptions{
		Name:   RootActorName,
		Faults: faults,
		Meter:  meter,
		Logger: logger,
	})
}

// ActorsReport is the body of GET /api/actors.
type ActorsReport struct {
	// NodeID is this node's host:port.
	NodeID string `json:"nodeId"`
	// UID is this process's incarnation.
	UID uint64 `json:"uid"`
	// Actors are the running actors, sorted by path. The cluster daemon
	// and the pub/sub mediator are listed with supervisor "own": peers
	// address them by name, so they run beside the tree (their failure
	// ends the node's membership and with it the process).
	Actors []ActorEntry `json:"actors"`
}

// ActorEntry is one actor of ActorsReport.
type ActorEntry struct {
	actors.ActorInfo
	// Supervisor is "tree" for an actor of the supervision tree (restart
	// with back-off, the node exits past the limit) and "own" otherwise.
	Supervisor string `json:"supervisor"`
}

// actorsHandler serves GET /api/actors.
func actorsHandler(tree *actors.Tree, d *daemon.Daemon, started time.Time) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		self := d.Self()
		rep := ActorsReport{NodeID: self.NodeID(), UID: self.UID}
		for _, name := range []struct{ path, kind string }{{daemon.Name, "ClusterDaemon"}, {pubsub.Name, "DistributedPubSubMediator"}} {
			rep.Actors = append(rep.Actors, ActorEntry{ActorInfo: actors.ActorInfo{Path: name.path, Kind: name.kind, StartedAt: started}, Supervisor: "own"})
		}
		for _, a := range tree.Actors() {
			rep.Actors = append(rep.Actors, ActorEntry{ActorInfo: a, Supervisor: "tree"})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

// actorFaultHandler is the test hook POST /debug/actor-fault?actor=PATH:
// the actor at PATH panics inside its Receive.
func actorFaultHandler(tree *actors.Tree) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Query().Get("actor")
		if err := tree.Fault(path, "test hook"); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
}
