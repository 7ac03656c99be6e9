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
// address holds, and mine the number the newcomer's address holds. The
// newcomer gets a session when mine is 0, or when mine+1 is still below
// top; the victim is then the oldest session among the addresses that
// hold top. Otherwise (the budget is empty, or the newcomer's address
// holds top or one less) it is refused.
//
// So a few addresses cannot hold the budget: an address that holds
// nothing always gets in, and so does one that holds at least two fewer
// than the largest holder; whoever holds the most pays for it. An
// address that holds the most, or one less, displaces no one: after an
// eviction the victim's address holds top-1 and cannot take it back, so
// steady holders do not evict each other in a loop (each eviction with
// mine > 0 lowers the sum of the squares of the holdings, which cannot
// go on for ever; only addresses that hold nothing can keep displacing
// one another, one session each). Among equals (many addresses holding
// one each) the oldest goes: a client that activates within the time
// the others take to create a budget's worth of sessions keeps its
// session.
//
// budget is not modified; its order does not matter (seq breaks ties).
func evictionVictim(budget []pendingSession, newcomer string) int {
	held := make(map[string]int, len(budget))
	top := 0
	for _, p := range budget {
		held[p.addr]++
		top = max(top, held[p.addr])
	}
	if mine := held[newcomer]; top == 0 || (mine > 0 && mine+1 >= top) {
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
