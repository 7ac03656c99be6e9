package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
)

// Where an applied deployment came from.
const (
	SourceCentral = "central" // the Config DB
	SourceCache   = "cache"   // this node's LocalDb, while the Config DB did not answer
)

// Central is the Config DB's deployments table as the follower reads it.
// ErrNoDeployment (wrapped) when the ClusterId has none.
type Central interface {
	LatestDeployment(ctx context.Context, clusterID string) (version int64, doc []byte, err error)
}

// ErrNoDeployment: the Config DB has no deployment for the ClusterId (or
// the cache holds none).
var ErrNoDeployment = errors.New("no deployment")

// Cache is this node's LocalDb boot cache of the last applied artifact.
type Cache interface {
	SaveArtifact(ctx context.Context, clusterID string, version int64, doc []byte) error
	// LoadArtifact returns the cached version and document, and the node
	// that saved them (this node, or its pair peer when the artifact came by
	// LocalDb replication; "" when the cache does not tell); ErrNoDeployment
	// (wrapped) when nothing is cached.
	LoadArtifact(ctx context.Context, clusterID string) (version int64, doc []byte, origin string, err error)
}

// FollowerOptions configure a Follower. Central, Decode and Apply are
// required.
type FollowerOptions struct {
	ClusterID string
	Central   Central
	Cache     Cache // nil: no boot cache
	// Decode decodes and validates a document (deployment.Decode).
	Decode func([]byte) (*deployment.Document, error)
	// Apply makes the node serve doc (the driver host); an error means it
	// was not applied at all and the previous one still serves.
	Apply func(doc *deployment.Document) error
	// PollInterval is Deployment:PollInterval. Default 5 s.
	PollInterval time.Duration
	// Timeout bounds one Config DB read. Default 2 s.
	Timeout time.Duration
	// OnStatus, if set, is called after every attempt with the new status
	// (metrics: otopcua_deployment_from_cache). Must not block.
	OnStatus func(FollowStatus)
	// OnApplied, if set, is called after a version from the Config DB was
	// applied (the deployments notice to the other nodes). Must not block.
	OnApplied func(version int64)
	Clock     clockwork.Clock
	Logger    *slog.Logger
}

// FollowStatus is what GET /api/deployment answers of the follower.
type FollowStatus struct {
	// Version and Source of the applied deployment (0, "" before one).
	Version   int64     `json:"version"`
	Source    string    `json:"source"`
	AppliedAt time.Time `json:"appliedAt"`
	// Origin names the node that saved the cached artifact (this node, or
	// its pair peer when the artifact arrived by LocalDb replication); set
	// while Source is "cache" and the cache tells.
	Origin string `json:"origin,omitempty"`
	// LastError says why the last attempt did not apply a newer version
	// (Config DB unreachable, an invalid document, a failed apply).
	LastError string `json:"lastError,omitempty"`
	// Refused is the newest version that was refused, with why.
	Refused       int64  `json:"refusedVersion,omitempty"`
	RefusedReason string `json:"refusedReason,omitempty"`
}

// Follower keeps a node on the newest deployment of its ClusterId: at
// start from the Config DB, else from the LocalDb cache (running from
// cache, with a warning), then every PollInterval and on every Kick. A
// document that does not decode, validate or apply is refused: the node
// keeps the previous one and says why. A new deployment always needs the
// Config DB; the cache is only read at start.
type Follower struct {
	o       FollowerOptions
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	started atomic.Bool

	mu     sync.Mutex
	status FollowStatus // mu must be held.
}

// NewFollower returns a follower; Start runs it.
func NewFollower(o FollowerOptions) *Follower {
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Follower{o: o, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// Start makes the first attempt (Config DB, else cache) before it
// returns, then follows on a goroutine of its own until Stop.
func (f *Follower) Start() {
	f.boot()
	f.started.Store(true)
	go f.run()
}

// Kick makes the follower look at the Config DB now (a deployments notice
// from the cluster). It never blocks.
func (f *Follower) Kick() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Stop ends the follower and waits for it. Safe before Start and more
// than once.
func (f *Follower) Stop() {
	f.once.Do(func() { close(f.stop) })
	if f.started.Load() {
		<-f.done
	}
}

// Status is the follower's current status.
func (f *Follower) Status() FollowStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

func (f *Follower) run() {
	defer close(f.done)
	t := f.o.Clock.NewTicker(f.o.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.Chan():
		case <-f.kick:
		}
		f.poll()
	}
}

// boot is the start-up attempt: central, else the cache.
func (f *Follower) boot() {
	err := f.poll()
	if err == nil || f.o.Cache == nil || f.Status().Version != 0 || !errors.Is(err, errCentral) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	version, doc, origin, cerr := f.o.Cache.LoadArtifact(ctx, f.o.ClusterID)
	if cerr != nil {
		f.o.Logger.Error("dataplane: the Config DB did not answer and the LocalDb cache has no usable deployment; serving no tags until the Config DB answers",
			"config_db_error", err, "cache_error", cerr)
		f.update(func(s *FollowStatus) { s.LastError = fmt.Sprintf("%v; cache: %v", err, cerr) })
		return
	}
	if aerr := f.applyBytes(version, doc, SourceCache); aerr != nil {
		f.o.Logger.Error("dataplane: the cached deployment could not be applied", "version", version, "err", aerr)
		return
	}
	if origin != "" {
		f.update(func(s *FollowStatus) {
			if s.Source == SourceCache && s.Version == version {
				s.Origin = origin
			}
		})
	}
	f.o.Logger.Warn("dataplane: running from the LocalDb cache: the Config DB did not answer at start-up; the node switches to the central copy once it answers",
		"version", version, "origin", origin, "config_db_error", err)
}

// errCentral marks a failure to read the Config DB.
var errCentral = errors.New("config DB")

// poll reads the newest central deployment and applies it when it is
// newer than the applied one, or when the applied one came from the cache.
func (f *Follower) poll() error {
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	version, doc, err := f.o.Central.LatestDeployment(ctx, f.o.ClusterID)
	if errors.Is(err, ErrNoDeployment) {
		f.update(func(s *FollowStatus) { s.LastError = "" })
		return nil
	}
	if err != nil {
		err = fmt.Errorf("%w: %v", errCentral, err)
		f.update(func(s *FollowStatus) { s.LastError = err.Error() })
		return err
	}
	cur := f.Status()
	switch {
	case version == cur.Refused:
		return nil // already refused, already said why
	case version < cur.Version, version == cur.Version && cur.Source == SourceCentral:
		f.update(func(s *FollowStatus) { s.LastError = "" })
		return nil
	case version == cur.Version: // running from the cache: the central copy takes over
		f.update(func(s *FollowStatus) { s.Source, s.LastError = SourceCentral, "" })
		f.o.Logger.Info("dataplane: the Config DB answers again; the deployment is the central copy", "version", version)
		return nil
	}
	if err := f.applyBytes(version, doc, SourceCentral); err != nil {
		return err
	}
	if f.o.OnApplied != nil {
		f.o.OnApplied(version)
	}
	if f.o.Cache != nil {
		if err := f.o.Cache.SaveArtifact(ctx, f.o.ClusterID, version, doc); err != nil {
			f.o.Logger.Warn("dataplane: the deployment could not be cached in the LocalDb; a restart during a Config DB outage would serve the previous one", "version", version, "err", err)
		}
	}
	return nil
}

// applyBytes decodes, validates and applies one version.
func (f *Follower) applyBytes(version int64, data []byte, source string) error {
	doc, err := f.o.Decode(data)
	if err == nil && doc.ClusterId != f.o.ClusterID {
		err = fmt.Errorf("the document is for ClusterId %q, this node is in %q", doc.ClusterId, f.o.ClusterID)
	}
	if err == nil {
		err = f.o.Apply(doc)
	}
	if err != nil {
		f.o.Logger.Error("dataplane: deployment refused; the previous one keeps serving", "version", version, "source", source, "err", err)
		f.update(func(s *FollowStatus) { s.Refused, s.RefusedReason, s.LastError = version, err.Error(), err.Error() })
		return err
	}
	now := f.o.Clock.Now()
	f.update(func(s *FollowStatus) {
		*s = FollowStatus{Version: version, Source: source, AppliedAt: now}
	})
	f.o.Logger.Info("dataplane: deployment applied", "version", version, "source", source)
	return nil
}

func (f *Follower) update(edit func(*FollowStatus)) {
	f.mu.Lock()
	edit(&f.status)
	s := f.status
	f.mu.Unlock()
	if f.o.OnStatus != nil {
		f.o.OnStatus(s)
	}
}
