package membership

// Status is a member's lifecycle status, as in Akka.NET's MemberStatus.
//
//	Joining → (WeaklyUp) → Up → Leaving → Exiting → Removed
//	any live status → Down → Removed
type Status uint8

// Member statuses. The zero value is invalid so that an unset Member is
// caught by CanTransition and by the gossip invariants.
const (
	Joining Status = iota + 1
	WeaklyUp
	Up
	Leaving
	Exiting
	Down
	Removed
)

var statusNames = [...]string{"Invalid", "Joining", "WeaklyUp", "Up", "Leaving", "Exiting", "Down", "Removed"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "Invalid"
}

// ParseStatus is the inverse of Status.String; ok is false for unknown names.
func ParseStatus(name string) (Status, bool) {
	for i := Joining; i <= Removed; i++ {
		if statusNames[i] == name {
			return i, true
		}
	}
	return 0, false
}

// allowed is Akka's Member.AllowedTransitions table.
var allowed = map[Status][]Status{
	Joining:  {WeaklyUp, Up, Leaving, Down, Removed},
	WeaklyUp: {Up, Leaving, Down, Removed},
	Up:       {Leaving, Down, Removed},
	Leaving:  {Exiting, Down, Removed},
	Exiting:  {Removed, Down},
	Down:     {Removed},
	Removed:  {},
}

// CanTransition reports whether a member may move from one status to
// another. Staying in the same status is not a transition and reports false.
func CanTransition(from, to Status) bool {
	for _, s := range allowed[from] {
		if s == to {
			return true
		}
	}
	return false
}
