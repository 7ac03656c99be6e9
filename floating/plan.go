package floating

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"time"
)

// Target is this node's identity in its provider's terms: where the
// planner points the actions. Only the fields of Provider are read.
type Target struct {
	// Provider selects the plan's shape.
	Provider Provider

	// Interface is the local interface the address lives on (linux).
	Interface string
	// AnnounceCount is how many gratuitous ARPs or unsolicited neighbour
	// advertisements follow an add (linux, at least 1).
	AnnounceCount int
	// AnnounceInterval is the time between two announcements (linux,
	// above 0).
	AnnounceInterval time.Duration

	// NetworkInterfaceID is this node's ENI (aws).
	NetworkInterfaceID string
	// ConfirmTimeout bounds the wait for instance metadata to list the
	// assigned address (aws, above 0).
	ConfirmTimeout time.Duration

	// VnicID is this node's VNIC OCID (oci).
	VnicID string

	// NIC is the resource id of this node's NIC (azure).
	NIC string
	// IPConfiguration is the name of the ipConfiguration that carries the
	// address (azure), the same on every member.
	IPConfiguration string
}

// ErrNoPlan is wrapped by PlanFor's refusals: the intent asks for no
// action (none, wait), or the intent or the target is incomplete.
var ErrNoPlan = errors.New("floating: no plan")

// Announcement kinds of OpAnnounce's "kind" parameter.
const (
	AnnounceGARP          = "garp"
	AnnounceUnsolicitedNA = "unsolicited-na"
)

// PlanFor turns an intent into the provider's sequence of actions for
// this node. It is pure: the same intent and target always give the same
// plan. Every action carries in.Epoch.
//
//	provider  seize                        reassign                               release
//	linux     addr-add, announce           addr-add, announce                     addr-del
//	aws       assign(reassign=false),      assign(reassign=true), confirm         unassign
//	          confirm
//	oci       assign(unassign-if-          assign(unassign-if-assigned=true)      unassign
//	          assigned=false)
//	azure     add                          remove (holder's NIC, found by         remove (own NIC)
//	                                       listing), add
//
// It refuses, with an error wrapping ErrNoPlan, the verbs none and wait
// (nothing to apply), an invalid address, an unknown provider and a
// target without the fields its provider needs.
func PlanFor(in Intent, t Target) (Plan, error) {
	switch in.Verb {
	case VerbSeize, VerbReassign, VerbRelease:
	default:
		return Plan{}, fmt.Errorf("%w: verb %q asks for no action (a plan is made for seize, reassign or release)", ErrNoPlan, in.Verb)
	}
	if !in.Address.IsValid() {
		return Plan{}, fmt.Errorf("%w: %s of %s: no valid floating address", ErrNoPlan, in.Verb, in.ClusterID)
	}
	if err := t.check(); err != nil {
		return Plan{}, fmt.Errorf("%w: %s target: %v", ErrNoPlan, t.Provider, err)
	}
	var p Plan
	switch t.Provider {
	case ProviderLinux:
		p = planLinux(in, t)
	case ProviderAWS:
		p = planAWS(in, t)
	case ProviderOCI:
		p = planOCI(in, t)
	case ProviderAzure:
		p = planAzure(in, t)
	}
	p.Provider, p.Intent = t.Provider, in
	if in.Reason != "" {
		p.Description += " — " + in.Reason
	}
	return p, nil
}

// check reports the first field the target's provider needs and lacks.
func (t Target) check() error {
	var missing string
	switch t.Provider {
	case ProviderLinux:
		switch {
		case t.Interface == "":
			missing = "Interface"
		case t.AnnounceCount < 1:
			missing = "AnnounceCount (at least 1)"
		case t.AnnounceInterval <= 0:
			missing = "AnnounceInterval (above 0)"
		}
	case ProviderAWS:
		switch {
		case t.NetworkInterfaceID == "":
			missing = "NetworkInterfaceID"
		case t.ConfirmTimeout <= 0:
			missing = "ConfirmTimeout (above 0)"
		}
	case ProviderOCI:
		if t.VnicID == "" {
			missing = "VnicID"
		}
	case ProviderAzure:
		switch {
		case t.NIC == "":
			missing = "NIC"
		case t.IPConfiguration == "":
			missing = "IPConfiguration"
		}
	default:
		return fmt.Errorf("unknown provider %q (known: %v)", t.Provider, Providers)
	}
	if missing != "" {
		return fmt.Errorf("no %s", missing)
	}
	return nil
}

// act builds one action of the plan's epoch.
func act(in Intent, op, target string, params ...string) Action {
	m := make(map[string]string, len(params)/2+1)
	m["address"] = in.Address.String()
	for i := 0; i+1 < len(params); i += 2 {
		m[params[i]] = params[i+1]
	}
	return Action{Op: op, Target: target, Params: m, Epoch: in.Epoch}
}

// headline is the plan's first words: "seize ADDR for SELF", "reassign
// ADDR from HOLDER to SELF", "release ADDR from SELF", then where and
// under which epoch.
func headline(in Intent, where string) string {
	var who string
	switch in.Verb {
	case VerbSeize:
		who = "for " + in.Self
	case VerbReassign:
		who = "from " + holder(in.From) + " to " + in.Self
	case VerbRelease:
		who = "from " + in.Self
	}
	return fmt.Sprintf("%s %s %s %s (epoch %d)", in.Verb, in.Address, who, where, in.Epoch)
}

func holder(from string) string {
	if from == "" {
		return "its unknown holder"
	}
	return from
}

func planLinux(in Intent, t Target) Plan {
	head := headline(in, "on "+t.Interface)
	if in.Verb == VerbRelease {
		return Plan{
			Actions:     []Action{act(in, OpAddrDel, t.Interface)},
			Description: head + ": remove the address",
			Risk:        "clients keep the MAC of " + in.Self + " in their ARP/ND caches until the new owner announces itself; if the removal fails the address stays here and the next reconcile removes it again",
		}
	}
	kind, words := AnnounceGARP, "gratuitous ARP"
	if in.Address.Addr().Is6() {
		kind, words = AnnounceUnsolicitedNA, "unsolicited neighbour advertisement"
	}
	count, interval := strconv.Itoa(t.AnnounceCount), t.AnnounceInterval.String()
	p := Plan{
		Actions: []Action{
			act(in, OpAddrAdd, t.Interface),
			act(in, OpAnnounce, t.Interface, "kind", kind, "count", count, "interval", interval),
		},
		Description: fmt.Sprintf("%s: add the address, announce it %s times every %s (%s)", head, count, interval, words),
		Risk:        "between the add and the first announcement clients still send to the MAC they cached; an announcement lost on the segment leaves a client on the old MAC until its cache expires (hence " + count + " of them)",
	}
	if in.Verb == VerbReassign {
		p.Risk += "; " + holder(in.From) + " cannot give the address up: if it wakes still holding it, two MACs answer until it reads on the stream that it is no longer the owner and releases it"
	}
	return p
}

func planAWS(in Intent, t Target) Plan {
	eni, timeout := t.NetworkInterfaceID, t.ConfirmTimeout.String()
	head := headline(in, "on ENI "+eni)
	confirm := act(in, OpAWSConfirm, eni, "timeout", timeout)
	switch in.Verb {
	case VerbSeize:
		return Plan{
			Actions:     []Action{act(in, OpAWSAssign, eni, "allow-reassignment", "false"), confirm},
			Description: fmt.Sprintf("%s: assign it as a secondary private IP without reassignment, then wait up to %s until instance metadata lists it", head, timeout),
			Risk:        "the assignment is asynchronous: until instance metadata lists the address (at most " + timeout + ") it may answer nowhere; if another ENI still holds it the assign fails and nothing moves",
		}
	case VerbReassign:
		return Plan{
			Actions:     []Action{act(in, OpAWSAssign, eni, "allow-reassignment", "true"), confirm},
			Description: fmt.Sprintf("%s: assign it with reassignment (it leaves the ENI of %s), then wait up to %s until instance metadata lists it", head, holder(in.From), timeout),
			Risk:        "the assignment is asynchronous: until instance metadata lists the address (at most " + timeout + ") it may still answer on " + holder(in.From) + "; the last assignment wins at AWS, so only the epoch fence stops a stale owner's late one; an Elastic IP associated with the address moves with it",
		}
	}
	return Plan{
		Actions:     []Action{act(in, OpAWSUnassign, eni)},
		Description: head + ": unassign the secondary private IP",
		Risk:        "if the unassign fails the address stays on this ENI until the next reconcile tries again; the new owner's assignment with reassignment takes it anyway",
	}
}

func planOCI(in Intent, t Target) Plan {
	vnic := t.VnicID
	head := headline(in, "on VNIC "+vnic)
	switch in.Verb {
	case VerbSeize:
		return Plan{
			Actions:     []Action{act(in, OpOCIAssign, vnic, "unassign-if-already-assigned", "false")},
			Description: head + ": assign it as a secondary private IP, not taking it from another VNIC",
			Risk:        "if another VNIC still holds the address the assign fails and nothing moves",
		}
	case VerbReassign:
		return Plan{
			Actions:     []Action{act(in, OpOCIAssign, vnic, "unassign-if-already-assigned", "true")},
			Description: fmt.Sprintf("%s: assign it as a secondary private IP, unassigning it from the VNIC of %s", head, holder(in.From)),
			Risk:        "the last assignment wins at OCI, so only the epoch fence stops a stale owner's late one; a public IP attached to the private IP moves with it",
		}
	}
	return Plan{
		Actions:     []Action{act(in, OpOCIUnassign, vnic)},
		Description: head + ": delete the secondary private IP from the VNIC",
		Risk:        "if the delete fails the address stays on this VNIC until the next reconcile tries again; a reserved public IP attached to it is detached",
	}
}

func planAzure(in Intent, t Target) Plan {
	nic, ipc := t.NIC, t.IPConfiguration
	head := headline(in, "on NIC "+path.Base(nic))
	add := act(in, OpAzureAdd, nic, "ip-configuration", ipc)
	switch in.Verb {
	case VerbSeize:
		return Plan{
			Actions:     []Action{add},
			Description: fmt.Sprintf("%s: add ipConfiguration %s with the address under the NIC's ETag", head, ipc),
			Risk:        "a change to the NIC meanwhile answers 412 and the plan is made again; if another NIC still holds the address the add fails and nothing moves",
		}
	case VerbReassign:
		return Plan{
			Actions:     []Action{act(in, OpAzureRemove, ""), add},
			Description: fmt.Sprintf("%s: remove the address from the NIC of %s (found by listing the resource group), then add ipConfiguration %s, each under its NIC's ETag", head, holder(in.From), ipc),
			Risk:        "two operations: between the remove and the add nobody holds the address; if the add fails after the remove it stays unheld until the next reconcile seizes it; a 412 on either step re-plans",
		}
	}
	return Plan{
		Actions:     []Action{act(in, OpAzureRemove, nic)},
		Description: fmt.Sprintf("%s: remove ipConfiguration %s from the NIC under its ETag", head, ipc),
		Risk:        "a change to the NIC meanwhile answers 412 and the plan is made again; until the remove succeeds the new owner cannot add the address",
	}
}
