package host

import (
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/otopcua/otopcua/actors"
	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/woken"
	"github.com/otopcua/otopcua/config"
)

const (
	// wokenTick is how often the woken-process fence looks at its loop's
	// gaps and at what its peers said: well within the acceptable pause.
	wokenTick = 250 * time.Millisecond
	// WokenFenceName is the fence's actor.
	WokenFenceName = "woken-fence"
)

// wokenMembers is what the fence reads of the membership daemon
// (*daemon.Daemon).
type wokenMembers interface {
	Snapshot() membership.State
	LastHeard(u membership.UniqueAddress) (time.Time, bool)
}

// wokenFence runs package woken's fence on a node, under every downing
// strategy: its actor ticks the core every wokenTick with the peers of the
// ClusterId as the membership daemon heard them; Woken is the RoleView's
// and the publish actor's input. The core is touched only under mu.
type wokenFence struct {
	d       wokenMembers
	cluster string
	clock   actors.Clock
	log     *slog.Logger

	mu       sync.Mutex
	core     *woken.Fence // mu must be held
	onChange func()       // the publish actor's wake-up; mu must be held
	pid      *actor.PID
}

func newWokenFence(cfg *config.Config, d wokenMembers, clock actors.Clock, logger *slog.Logger) (*wokenFence, error) {
	c := woken.Config{
		Pause:    cfg.Cluster.FailureDetector.AcceptableHeartbeatPause,
		Expected: 1 + len(cfg.OpcUa.PeerApplicationUris),
		Alone:    aloneByConfiguration(cfg),
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &wokenFence{d: d, cluster: cfg.Node.ClusterId, clock: clock, log: logger,
		core: woken.NewFence(c, clock.Now())}, nil
}

// Woken reports whether the fence is up now. Safe for concurrent use.
func (f *wokenFence) Woken() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.core.Woken(f.clock.Now())
}

// setOnChange installs the publish actor's wake-up.
func (f *wokenFence) setOnChange(fn func()) {
	f.mu.Lock()
	f.onChange = fn
	f.mu.Unlock()
}

// start spawns the fence's actor under tree.
func (f *wokenFence) start(tree *actors.Tree) error {
	pid, err := tree.Spawn(tree.Props("WokenFence", func() actor.Actor { return &wokenFenceActor{f: f} }), WokenFenceName)
	if err != nil {
		return err
	}
	f.pid = pid
	return nil
}

func (f *wokenFence) stop(tree *actors.Tree) {
	if f.pid != nil {
		_ = tree.Root().StopFuture(f.pid).Wait()
	}
}

// tick feeds the core its timer with the peers as heard now; a change is
// logged and wakes the publish actor.
func (f *wokenFence) tick() {
	obs := f.observe()
	f.mu.Lock()
	c := f.core.Tick(f.clock.Now(), obs)
	wokeAt, fn := f.core.WokeAt(), f.onChange
	f.mu.Unlock()
	switch {
	case c.Woke:
		f.log.Warn("woken-process fence up: this process did not run for longer than the heartbeat pause (frozen?); it writes, acknowledges, emits and drains nothing, and shows ServiceLevel 100 at most, until it has heard every peer again",
			"gap", c.Gap.String(), "waiting for", c.Missing)
	case c.Cleared:
		f.log.Info("woken-process fence down: every peer heard since the wake", "wokeAt", wokeAt)
	default:
		return
	}
	if fn != nil {
		fn()
	}
}

// observe lists the members of the ClusterId other than this node, with
// when the daemon last admitted a message from each.
func (f *wokenFence) observe() woken.Observation {
	st := f.d.Snapshot()
	var obs woken.Observation
	for _, m := range st.Gossip.Members {
		if m.Address == st.Self || m.ClusterID != f.cluster || !m.HasRole(config.RoleDriver) {
			continue
		}
		p := woken.Peer{ID: m.Address.String()}
		p.LastHeard, p.Heard = f.d.LastHeard(m.Address)
		obs.Peers = append(obs.Peers, p)
	}
	return obs
}

type wokenTickMsg struct{}

type wokenFenceActor struct {
	f    *wokenFence
	stop func()
}

func (a *wokenFenceActor) Receive(c actor.Context) {
	switch c.Message().(type) {
	case *actor.Started:
		a.stop = actors.Every(c.ActorSystem().Root, a.f.clock, c.Self(), wokenTick, wokenTickMsg{})
	case *actor.Stopping, *actor.Restarting:
		if a.stop != nil {
			a.stop()
		}
	case wokenTickMsg:
		a.f.tick()
	}
}
