package fastpath

// MaxProbes is the number of TCP probes the driver makes at most.
const MaxProbes = 3

// ProbeWindow is the time, in ms, within which the probes are made.
const ProbeWindow = 300

// ProbeResult is the outcome of one TCP connect to the peer's cluster port.
type ProbeResult uint8

// Probe results.
const (
	Refused  ProbeResult = iota + 1 // connection actively refused (RST)
	Timeout                         // no answer within the probe's share of ProbeWindow
	Accepted                        // a process accepted the connection
)

func (p ProbeResult) String() string {
	switch p {
	case Refused:
		return "Refused"
	case Timeout:
		return "Timeout"
	case Accepted:
		return "Accepted"
	}
	return "ProbeResult(?)"
}

// Input is the evidence about one peer.
type Input struct {
	// ConnectionBroken: the transport reported the peer's connection lost.
	ConnectionBroken bool
	// DetectorUnreachable: the failure detector suspects the peer.
	DetectorUnreachable bool
	// Probes are the results of the probes made, in order (at most
	// MaxProbes are considered).
	Probes []ProbeResult
}

// Verdict is what to do about the peer.
type Verdict uint8

// Verdicts.
const (
	// NoAction: nothing suggests the peer failed.
	NoAction Verdict = iota + 1
	// MarkUnreachableNow: every probe was refused; no process listens.
	MarkUnreachableNow
	// DeferToDetector: the evidence is not conclusive; let phi decide.
	DeferToDetector
)

func (v Verdict) String() string {
	switch v {
	case NoAction:
		return "NoAction"
	case MarkUnreachableNow:
		return "MarkUnreachableNow"
	case DeferToDetector:
		return "DeferToDetector"
	}
	return "Verdict(?)"
}

// Decide applies the rule: with a trigger, MarkUnreachableNow only when at
// least one probe was made and every probe (up to MaxProbes) was Refused.
func Decide(in Input) Verdict {
	if !in.ConnectionBroken && !in.DetectorUnreachable {
		return NoAction
	}
	probes := in.Probes
	if len(probes) > MaxProbes {
		probes = probes[:MaxProbes]
	}
	if len(probes) == 0 {
		return DeferToDetector
	}
	for _, p := range probes {
		if p != Refused {
			return DeferToDetector
		}
	}
	return MarkUnreachableNow
}
