package uaserver

// pendingSession is one session of the unactivated budget as the eviction
// rule sees it: the client IP address that created it and its place in
// creation order (smaller is older; unique).
type pendingSession struct {
	addr string
	seq  uint64
}

// evictionVictim decides who makes room when the unactivated budget
// (MaxUnactivatedSessions) is full and a client from address newcomer asks
// for a session. It returns the index in budget of the session to evict,
// or -1 when the newcomer is refused (BadTooManySessions).
//
// The rule: let top be the largest number of budget sessions any one
// address holds. When the newcomer's address holds top or more (it is
// itself the largest holder, alone or tied) or the budget is empty, the
// newcomer is refused. Otherwise the victim is the oldest session among
// the addresses that hold top.
//
// So a few addresses cannot hold the budget: whoever holds the most pays
// for a newcomer, and an address that holds less than the largest holder
// always gets in (one that holds nothing whenever any address holds
// anything). An address that holds the most never displaces anyone, so
// the largest holders cannot evict each other in a loop. Among equals
// (many addresses holding one each) the oldest goes: a client that
// activates within the time the others take to create a budget's worth
// of sessions keeps its session.
//
// budget is not modified; its order does not matter (seq breaks ties).
func evictionVictim(budget []pendingSession, newcomer string) int {
	held := make(map[string]int, len(budget))
	top := 0
	for _, p := range budget {
		held[p.addr]++
		top = max(top, held[p.addr])
	}
	if top == 0 || held[newcomer] >= top {
		return -1
	}
	victim := -1
	for i, p := range budget {
		if held[p.addr] == top && (victim < 0 || p.seq < budget[victim].seq) {
			victim = i
		}
	}
	return victim
}
