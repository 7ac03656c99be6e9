// Package singleton is otopcua's cluster singleton manager, with Akka.NET's
// ClusterSingletonManager semantics: one Manager per node and singleton
// (Name, Role) runs the singleton's Instance on the node that is its
// Placement — the oldest member that is Up (or Leaving) and carries the
// role — and only there. The admin-role RedundancyStateActor is the
// singleton otopcua runs this way.
//
// The decision core (Placement, JudgePrevious, and the machine behind
// Manager) is pure: membership views, hand-over messages, ticks and
// instance stops in; effects out. The Manager runs it in a protoactor
// actor of kind ManagerKind ("ClusterSingletonManager") named
// Name+ManagerSuffix (e.g. redundancy-state-manager), spawned under
// Options.Parent — the node's actors.Tree, or a private local actor system
// when nil. The actor takes the inputs in order (membership events and
// hand-over messages are sent to it, the retry tick is a message from the
// injected clock) and carries the effects out: start the instance, stop
// it, send a hand-over message through the pub/sub mediator, log.
//
// The instance is either an Instance from Options.Factory (started in the
// actor, stopped on a goroutine) or, with Options.Child, an actor child
// of the manager named Name: under the tree its path is
// node/<Name>-manager/<Name>, supervised by the tree's strategy (a failing
// instance restarts; one failing past the tree's limit ends the node). Its
// stop is the child's termination.
//
// What survives a restart of the manager actor: the machine, the running
// instance's handle and the leave waiters live in the Manager value, not
// in the incarnation, so a restarted manager continues where it was and
// never forgets that this node runs the singleton. protoactor stops an
// actor's children when it restarts, so the new incarnation starts a
// Child instance again at once (or counts it stopped when a stop was under
// way); a Factory instance is no actor and keeps running.
//
// Hand-over on a graceful leave (Leave → Exiting → Removed): the leaving
// oldest's manager sees itself Exiting (or its exit task runs) and offers
// TakeOverFromMe to the new placement; the new placement, seeing the old
// one Exiting, asks HandOverToMe; the old one answers HandOverInProgress,
// stops its instance, and sends HandOverDone; only then does the new one
// start. The leaving node's exit task (ExitGroup.Task, run by the daemon
// before it confirms its exit) returns only when its instance has
// stopped, so the old incarnation's removal cannot come before its stop:
// there is no instant at which both run.
//
// A node that becomes the placement waits for every member that may still
// run the instance: the previous oldest it saw, every older member with
// the role that is Exiting or Down (it may not have seen which of them ran
// it), and any member that offers TakeOverFromMe. Each must confirm with
// HandOverDone, be removed, or be Down and unreachable.
//
// Take-over after a crash: an unreachable oldest stays the placement
// until it is downed (never while it is merely unreachable). Once it is
// Down and unreachable, or removed, the next oldest starts at once; if it
// is Down but still reachable (it will stop as soon as it sees its own
// Down) the next oldest waits for its HandOverDone, at most
// HandOverTimeout — a downed node must stop its instance within that
// time and within the failure detector's acceptable pause. The
// documented trade of auto-down applies: across a partition, each side
// may down the other and both run the singleton until the partition
// heals.
//
// A manager stops its instance for good when its own member is downed or
// removed, or when Stop is called.
//
// Messages travel as wire.SingletonHandOver through the node's mediator
// (pubsub.Mediator.SendTo on Topic(Name)), which drops a message meant for
// another incarnation at the same address; a manager also checks that a
// HandOverDone comes from an incarnation it waits for.
//
// Caller's duties (package host): create an ExitGroup and put its Task in
// the daemon's ExitingTasks before starting the daemon; start the
// mediator; Start one Manager per singleton on every node with the role,
// with the group as Exit and the node's tree as Parent; on shutdown, after the leave, Stop every
// manager before the mediator and the actor system.
//
// Concurrency: the machine lives in the manager actor; Active and Phase
// read atomics; OnChange is called from the actor and must not block;
// Instance.Start is called from it too and must return promptly,
// Instance.Stop runs on its own goroutine.
package singleton
