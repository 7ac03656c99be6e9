package floating

// The kinds of drift Drift reports (the label of
// otopcua_floating_drift_total{kind}).
const (
	DriftMissing  = "missing"  // the owner does not hold the address
	DriftExtra    = "extra"    // a non-owner holds it
	DriftConflict = "conflict" // a foreign holder (unknown MAC, instance or NIC) holds it
)

// Drift compares what the network shows (obs) with the desired owner, for
// the reconcile loop of the node self. It returns the kind of drift (""
// when none) and the verb that repairs it:
//
//	self is owner, nobody holds it            missing   seize
//	self is owner, another member holds it    missing   reassign
//	self is not owner and holds it            extra     release
//	a foreign holder holds it                 conflict  none (reported, never fought over)
//	anything else                             ""        none
//
// Drift reads no liveness: the reconcile loop repairs what the last
// Decide allowed; a reassign it proposes is run only when Decide, on the
// same view, says reassign too.
func Drift(owner, self string, obs Observation) (kind string, verb Verb) {
	held := obs.Kind == HolderSelf || (obs.Kind == HolderMember && obs.Member == self)
	switch {
	case obs.Kind == HolderForeign:
		return DriftConflict, VerbNone
	case held && owner != self:
		return DriftExtra, VerbRelease
	case held || owner != self:
		return "", VerbNone
	case obs.Kind == HolderMember:
		return DriftMissing, VerbReassign
	}
	return DriftMissing, VerbSeize
}
