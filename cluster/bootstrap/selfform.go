package bootstrap

import m "github.com/otopcua/otopcua/cluster/membership"

// DefaultSelfFormAfter is Cluster:SelfFormAfter's default, in ms.
const DefaultSelfFormAfter = 10_000

// SelfFormInput is the snapshot the decision is taken on.
type SelfFormInput struct {
	// Window is SelfFormAfter in ms; ≤ 0 disables the fallback.
	Window int64
	// Elapsed is the time since the current window started, in ms.
	Elapsed int64
	// OwnAddressInSeeds: this node's address is in its own seed list.
	OwnAddressInSeeds bool
	// AnotherSeedAcceptsTCP: a probe of the other seeds found one listening.
	// Only meaningful once the window has expired.
	AnotherSeedAcceptsTCP bool
	// IsMember: the node already has cluster membership.
	IsMember bool
	// Refusals are the refusals this node holds, oldest first (see
	// Refusal): any one keeps the fallback from forming.
	Refusals []Refusal
}

// Verdict is the outcome of DecideSelfForm.
type Verdict uint8

// Verdicts.
const (
	// Disabled: the window is ≤ 0; wait on InitJoin indefinitely.
	Disabled Verdict = iota + 1
	// Pending: the window has not expired yet.
	Pending
	// SelfForm: join this node itself and form a new cluster now.
	SelfForm
	// WaitAnotherWindow: another seed is reachable; start a new window.
	WaitAnotherWindow
	// NeverSelfForm: this node must not self-form (see Reason); stop checking.
	NeverSelfForm
	// Refused: the window expired but a member of the mesh refused this
	// node (see Reason); do not self-form, start a new window.
	Refused
)

func (v Verdict) String() string {
	switch v {
	case Disabled:
		return "Disabled"
	case Pending:
		return "Pending"
	case SelfForm:
		return "SelfForm"
	case WaitAnotherWindow:
		return "WaitAnotherWindow"
	case NeverSelfForm:
		return "NeverSelfForm"
	case Refused:
		return "Refused"
	}
	return "Verdict(?)"
}

// Reasons carried by NeverSelfForm.
const (
	ReasonAlreadyMember = "already a member"
	ReasonNotInSeeds    = "this node is not in its own seed list"
)

// SelfFormDecision is a verdict with its reason (NeverSelfForm and
// Refused only).
type SelfFormDecision struct {
	Verdict Verdict
	Reason  string
}

// DecideSelfForm applies the fallback's rules in order: disabled, already a
// member, guard 2 (own address in seeds), window not expired, the refusal
// guard (a member refused this node), guard 1 (another seed accepts TCP),
// else self-form. The refusal guard comes before guard 1: a refusing peer
// may be gone by the time of the probe, and its refusal still stands.
func DecideSelfForm(in SelfFormInput) SelfFormDecision {
	switch {
	case in.Window <= 0:
		return SelfFormDecision{Verdict: Disabled}
	case in.IsMember:
		return SelfFormDecision{Verdict: NeverSelfForm, Reason: ReasonAlreadyMember}
	case !in.OwnAddressInSeeds:
		return SelfFormDecision{Verdict: NeverSelfForm, Reason: ReasonNotInSeeds}
	case in.Elapsed < in.Window:
		return SelfFormDecision{Verdict: Pending}
	case len(in.Refusals) > 0:
		return SelfFormDecision{Verdict: Refused, Reason: ReasonRefused(in.Refusals[0])}
	case in.AnotherSeedAcceptsTCP:
		return SelfFormDecision{Verdict: WaitAnotherWindow}
	default:
		return SelfFormDecision{Verdict: SelfForm}
	}
}

// InSeeds reports whether self is one of seeds.
func InSeeds(self m.Address, seeds []m.Address) bool {
	for _, s := range seeds {
		if s == self {
			return true
		}
	}
	return false
}

// OtherSeeds is seeds without self, in order: the addresses to probe.
func OtherSeeds(self m.Address, seeds []m.Address) []m.Address {
	var out []m.Address
	for _, s := range seeds {
		if s != self {
			out = append(out, s)
		}
	}
	return out
}
