// Package alarms is otopcua's scripted-alarm engine: every node of a
// ClusterId evaluates every alarm of the applied deployment on its own
// readings, holds each as an OPC UA Part 9 condition (Condition), and only
// the Primary publishes the transitions on the cluster's alerts topic, so
// that each real transition is published once although both nodes of a
// pair detect it.
//
// Pure cores (no clock, no I/O) and the engine around them:
//
//   - Condition (condition.go): the state machine of one alarm — active,
//     acknowledged, confirmed, enabled, retain, quality — and the status
//     codes of its methods.
//   - Reconciler (reconcile.go): pairs this node's detections of one
//     alarm with the Primary's transitions — pending detections, credits —
//     so that a node that becomes Primary publishes what the old Primary did
//     not.
//   - Engine (engine.go, core.go, remote.go, actor.go): a protoactor-go
//     actor ("alarm-host") whose single goroutine owns every alarm. It
//     compiles the conditions once per deployment (deployment.CompileAlarms),
//     watches the tags they read, evaluates an alarm on every reading of
//     one of them, and talks to the cluster through PubSub.
//
// Inputs: the tags a scripted alarm's condition reads (ValueSource), and
// the conditions of upstream OPC UA servers (Engine.Upstream, upstream.go:
// an opcua device with "alarms"). An upstream condition is an alarm named
// "<device>/<ConditionId>" (UpstreamName) that is not evaluated: its
// ActiveState changes are detections that go through the same chain; its
// acknowledgements come from the upstream on every node and are published
// by the Primary; Acknowledge and Confirm on it are sent upstream
// (Options.Upstream) by the Primary, off the actor.
//
// The exactly-once chain:
//
//  1. Evaluation. A reading of a tag evaluates the alarms that read it. An
//     input that is not Good, or an evaluation error (a modulo by zero),
//     makes the alarm's Quality Bad and keeps its state; it is logged once
//     until the alarm is Good again. The first evaluation after start sets
//     the state without a transition — the other node of the pair has told
//     the cluster — unless this node is the only driver member.
//  2. Publication. A change found by evaluation is handed to the alarm's
//     Reconciler. A node the Primary gate (gate.Decide, asked through
//     Options.Gate) lets act as Primary publishes it with a new
//     TransitionID ("<uid>/<alarm>/<seq>"); on another node the detection
//     is counted as a gate denial at site alarm-emit and held as pending.
//     The Primary's transitions consume the pending detections, or become
//     credits that consume this node's later detections.
//  3. Failover. When the gate starts to let this node act as Primary, it
//     publishes every alarm's pending detections, oldest first, then a
//     snapshot; from then on its own detections, less those credited.
//  4. Methods. Acknowledge, Confirm, Enable, Disable and AddComment are
//     accepted on the acting Primary only (else BadInvalidState, counted at
//     site ack, a Warning while the role is unknown); the change is
//     published and every other node applies it on receipt. A node learns
//     the Primary's acknowledged, confirmed and comment state when its
//     detections and the Primary's are in step (no pending, no credit) and
//     their active states agree; the Primary's alarm-state snapshot every
//     SnapshotInterval does the same for a node that restarted or missed a
//     transition, and settles pending detections the Primary has behind it.
//  5. History. OnTransition sees every transition of this ClusterId the
//     node receives on alerts, its own publications included; the
//     historian adapter enqueues there on every node.
//
// Invariants (reconcile_test.go checks them with rapid over random runs of
// a pair):
//
//   - When both nodes detect every change of an alarm, the transitions the
//     Primary delivered before it died (its last ones may be lost in flight)
//     and those the survivor publishes are the alarm's changes, each once —
//     whatever the delays, the interleaving and the moment of the failure.
//   - A live Primary's message lost on the way (never two in a row) makes
//     the other node publish nothing twice; the lost change is the one the
//     Primary's own node historized.
//   - When a node misses changes (a pulse shorter than its polls), the
//     published transitions end in the survivor's state (Repair), and once
//     the alarm has rested for the credit TTL and a snapshot period every
//     change is published once again; until then a change near a missed
//     pulse may be published twice or not at all (at most two per pulse).
//
// Duties of the caller (the host):
//
//  1. Apply the deployment to the data plane before the engine (the tags
//     must exist when the engine watches them), and every later version
//     to both, in the same order.
//  2. Adapt the address space as ValueSource: Watch delivers the current
//     reading at once, then every new one.
//  3. Pass the node's gate.Guard (over the redundancy RoleView, counting
//     into telemetry's PrimaryGateDenied) as Gate and the pub/sub mediator
//     as PubSub; link wrapperspb.BytesValue into the binary.
//  4. Pass telemetry's Meter as Metrics.Meter.
//  5. Hand every device's condition updates to Upstream (it never
//     blocks), and pass an Options.Upstream that reaches the device's
//     driver.
//  6. Call Stop before the actor system shuts down.
//
// Concurrency: the engine's state lives on its actor goroutine; Sink and
// OnTransition callbacks run there and must not block. Alerts and State
// read a copy guarded by one mutex (view.mu), never waiting for the actor;
// there is no other lock.
package alarms
