package floating

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Provider names the network that carries the floating address; it selects
// the executor. Accepted by Redundancy:FloatingAddress:Provider.
type Provider string

// The providers.
const (
	// ProviderLinux: the address is added to a local interface over
	// netlink and announced with gratuitous ARP (IPv4) or an unsolicited
	// neighbour advertisement (IPv6). On-premises, one L2 segment.
	ProviderLinux Provider = "linux"
	// ProviderAWS: a secondary private IP of an ENI, moved with
	// AssignPrivateIpAddresses(AllowReassignment); asynchronous, confirmed
	// through instance metadata.
	ProviderAWS Provider = "aws"
	// ProviderOCI: a secondary private IP of a VNIC, moved with
	// CreatePrivateIp/UpdatePrivateIp (unassign-if-already-assigned).
	ProviderOCI Provider = "oci"
	// ProviderAzure: an ipConfiguration of a NIC, moved in two steps
	// (removed from the old NIC, added to the new) under ETag/If-Match.
	ProviderAzure Provider = "azure"
)

// Providers lists every accepted provider, in the order messages name them.
var Providers = []Provider{ProviderLinux, ProviderAWS, ProviderOCI, ProviderAzure}

// Verb is what a plan does to this node's hold on the address.
type Verb string

// The verbs.
const (
	// VerbNone: nothing to do (the node holds the address and should, or
	// holds it not and should not).
	VerbNone Verb = "none"
	// VerbSeize: take the address nobody holds.
	VerbSeize Verb = "seize"
	// VerbReassign: take the address from a holder that cannot give it up
	// itself (dead, frozen or cut off, as the shared stream shows) — the
	// providers' allow-reassignment / unassign-if-assigned.
	VerbReassign Verb = "reassign"
	// VerbRelease: give the address up.
	VerbRelease Verb = "release"
	// VerbWait: this node should own the address but may not take it yet
	// (the holder is still live on the stream, or the promotion hold
	// runs); the Decision's Reason says why.
	VerbWait Verb = "wait"
)

// Intent is the planner's input: what this node must do, and under which
// ownership epoch (the redundancy epoch of its ClusterId).
type Intent struct {
	ClusterID string
	// Address is the floating address with its prefix length.
	Address netip.Prefix
	// Self is this node's id (host:port); Owner the desired owner ("" when
	// no member is eligible).
	Self, Owner string
	// Verb is seize, reassign or release (the planner refuses none and wait).
	Verb Verb
	// From is the holder a reassign takes the address from ("" unknown).
	From string
	// Epoch is the ownership epoch the plan runs under; every action
	// carries it.
	Epoch uint64
	// Reason is the decision's reason, copied into the plan's description.
	Reason string
}

// Action is one step of a plan: data only, interpreted by the provider's
// executor. Op names the step ("addr-add", "garp", "aws-assign-private-ip",
// …); Target the resource (interface, ENI, VNIC, NIC); Params the rest, in
// a stable order when printed (sorted keys).
type Action struct {
	Op     string
	Target string
	Params map[string]string
	Epoch  uint64
}

// Plan is the provider-specific sequence of actions for one Intent. Its
// Description reads as seize / reassign / release in words an operator
// understands; Risk says what can go wrong half-way.
type Plan struct {
	Provider    Provider
	Intent      Intent
	Actions     []Action
	Description string
	Risk        string
}

// HolderKind classifies who really holds the address, as an executor
// observed it.
type HolderKind string

// The holder kinds.
const (
	HolderNone    HolderKind = "none"    // nobody answers for the address
	HolderSelf    HolderKind = "self"    // this node
	HolderMember  HolderKind = "member"  // another member of the ClusterId (ID names it)
	HolderForeign HolderKind = "foreign" // an unknown MAC / instance / NIC: a conflict, never fought over
)

// Observation is what an executor saw of the address: the interface state
// and an ARP/ND probe on-prem, the provider's describe call in the cloud.
type Observation struct {
	Kind HolderKind
	// ID is the holder's identity in the provider's terms: a MAC address
	// on-prem, an ENI/VNIC/NIC id in the cloud ("" for none).
	ID string
	// Member is the member's node id when Kind is HolderMember or HolderSelf.
	Member string
	// At is when the observation was made (the executor's clock; for
	// display only, never for a decision).
	At time.Time
}

// Executor applies plans for one provider and observes the address. Its
// methods may block on I/O until ctx ends; they are called from one
// goroutine (the node's floating-address loop), never concurrently.
type Executor interface {
	// Provider is the executor's provider.
	Provider() Provider
	// Apply runs p's actions in order. It refuses, with an error wrapping
	// ErrStaleEpoch, a plan whose epoch is lower than the last epoch it
	// applied (persisted across restarts), so a stale owner's late action
	// is fenced; a plan at the same or a higher epoch runs and records its
	// epoch first. An action that fails stops the plan; the error says
	// which.
	Apply(ctx context.Context, p Plan) error
	// Observe reports who really holds the address now.
	Observe(ctx context.Context) (Observation, error)
}

// ErrStaleEpoch is wrapped by Executor.Apply when a plan's epoch is older
// than the last epoch the executor applied.
var ErrStaleEpoch = errors.New("floating: stale ownership epoch")

// StaleEpochError is Apply's refusal of a stale plan.
type StaleEpochError struct {
	Plan, Last uint64
}

func (e *StaleEpochError) Error() string {
	return fmt.Sprintf("floating: plan of ownership epoch %d refused: epoch %d already applied", e.Plan, e.Last)
}

// Unwrap makes errors.Is(err, ErrStaleEpoch) true.
func (e *StaleEpochError) Unwrap() error { return ErrStaleEpoch }

// ErrConflict is wrapped by an executor when the provider refuses an action
// because someone else changed the resource meanwhile (Azure's 412
// Precondition Failed on If-Match): the caller re-observes and re-plans.
var ErrConflict = errors.New("floating: resource changed meanwhile")

// Action ops: the planner emits them, the provider's executor interprets
// them. Params keys are listed with each.
const (
	// linux. addr-add / addr-del: Params "address" (CIDR). announce:
	// "address", "kind" ("garp" or "unsolicited-na"), "count", "interval"
	// (a Go duration).
	OpAddrAdd  = "addr-add"
	OpAddrDel  = "addr-del"
	OpAnnounce = "announce"
	// aws. assign: "address", "allow-reassignment" ("true"/"false");
	// confirm: "address", "timeout" (waits until instance metadata lists
	// the address on the ENI); unassign: "address".
	OpAWSAssign   = "aws-assign-private-ip"
	OpAWSConfirm  = "aws-confirm-metadata"
	OpAWSUnassign = "aws-unassign-private-ip"
	// oci. assign: "address", "unassign-if-already-assigned"; unassign:
	// "address" (deletes the secondary private IP object from the VNIC).
	OpOCIAssign   = "oci-assign-private-ip"
	OpOCIUnassign = "oci-unassign-private-ip"
	// azure. remove: "address" (Target: the NIC that holds it, "" = found
	// by listing the resource group); add: "address", "ip-configuration".
	// Both under If-Match of the NIC's ETag; a 412 is ErrConflict.
	OpAzureRemove = "azure-remove-ip-configuration"
	OpAzureAdd    = "azure-add-ip-configuration"
)

// Params are the timings of eligibility, from Redundancy:FloatingAddress.
type Params struct {
	// AutoFailover: when false the address moves only when its holder
	// gives it up (a planned failover or a drain), never on liveness.
	AutoFailover bool
	// HeartbeatTTL and PromotionHold: a member whose last heartbeat on the
	// shared stream is older than StreamMax - (TTL + Hold) is stale.
	HeartbeatTTL, PromotionHold time.Duration
	// LicenceRequired: the pair runs under lease-majority; a member must
	// hold its licence to be eligible.
	LicenceRequired bool
}

// Member is one member of the ClusterId as this node sees it.
type Member struct {
	// Node is the member's node id (host:port).
	Node string
	// Primary: the last redundancy snapshot names it Primary.
	Primary bool
	// Draining: a planned failover or a drain takes it out.
	Draining bool
	// Healthy: its ServiceLevel is in the Healthy band.
	Healthy bool
	// Licensed: it holds its licence (lease-majority).
	Licensed bool
	// Heartbeat is the time, on the shared stream's clock, of its last
	// heartbeat (zero: none seen).
	Heartbeat time.Time
	// Claims: its last heartbeat says it holds the address.
	Claims bool
	// Successor: the member the election picks when the Primary is gone
	// (the next oldest driver member): a planned failover hands the
	// address to it while the draining Primary is still Primary.
	Successor bool
	// Gone: the process is proven dead (its cluster port refuses
	// connections after membership removed it) — not merely unreachable.
	Gone bool
}

// View is everything a floating-address decision reads, for one node.
type View struct {
	// Self is this node's id; it appears in Members.
	Self    string
	Members []Member
	// StreamMax is the latest event time observed on the shared stream
	// (streamMaxObservedAt): "now" for staleness, never a wall clock.
	StreamMax time.Time
	// Epoch is the ClusterId's redundancy epoch (the ownership epoch).
	Epoch uint64
	// Holder is who really holds the address, as last observed.
	Holder Observation
}

// Decision is Decide's answer for the node of View.Self.
type Decision struct {
	// Owner is the desired owner ("" when no member is eligible).
	Owner string
	// Verb is what this node does now.
	Verb Verb
	// From is the holder a reassign takes the address from.
	From string
	// Epoch is the ownership epoch of the verb.
	Epoch uint64
	// Reason explains the verb in an operator's words.
	Reason string
}
