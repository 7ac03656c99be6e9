package forward

import "github.com/gopcua/opcua/ua"

// StatusStaleEpoch answers a forwarded request stamped with a redundancy
// epoch newer than the receiving Primary's own: the receiver is the stale
// one (a newer snapshot named someone else Primary and it has not heard
// yet), so it executes nothing. BadInvalidState: the server's state does
// not allow the operation. The sender treats it as "not executed" and
// asks the Primary it knows of again.
var StatusStaleEpoch = ua.StatusBadInvalidState

// EpochOK is the Primary's epoch check on a forwarded request: refuse one
// whose sender saw a newer epoch than the receiver's own. An older one is
// accepted: a Secondary hears of a promotion after the Primary does, and
// the Primary's own gate decides whether it is still Primary.
func EpochOK(sender, own uint64) bool { return sender <= own }
