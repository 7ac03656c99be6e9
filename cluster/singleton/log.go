package singleton

// Log messages operators grep for. Their texts are stable: alerting rules
// and runbooks match them. Each line carries "singleton" (the Name) and
// "role".
const (
	// LogStarted: this node started the singleton ("reason": oldest — no
	// earlier holder known, hand-over — the previous oldest confirmed its
	// stop, take-over — the previous oldest is gone without a word;
	// "previous": its incarnation).
	LogStarted = "singleton started"
	// LogHandedOver: this node stopped its instance and told the new
	// oldest ("to"; "nobody" when no other member has the role).
	LogHandedOver = "singleton handed over"
	// LogTakenOver: this node takes the singleton over from a previous
	// oldest that was removed or downed (a crash), or that stayed silent
	// past the hand-over timeout while Down ("detail"). Followed by
	// LogStarted.
	LogTakenOver = "singleton taken over"
	// LogStopped: the instance stopped for good on this node: it was
	// downed, removed, or the manager stopped ("reason").
	LogStopped = "singleton stopped"
	// LogWaiting: a new oldest has waited a hand-over timeout for a
	// previous oldest that is still a live member; it keeps waiting.
	LogWaiting = "singleton hand-over waiting for the previous oldest"
	// LogEnded: the manager ended and will not run the singleton again
	// ("reason").
	LogEnded = "singleton manager ended"
)
