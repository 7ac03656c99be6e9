// Package phi is the phi-accrual failure detector of the cluster (Akka's
// PhiAccrualFailureDetector), as a pure value: time enters only as the
// millisecond instants the caller passes in.
//
// phi = -log10(1 - F(elapsed)), where F is the cumulative normal
// distribution with the mean of the recent heartbeat intervals plus the
// acceptable heartbeat pause, and their standard deviation (at least
// MinStdDeviation). F is approximated with the logistic function
// 1/(1+e^(-y(1.5976+0.070566y²))), y = (elapsed-mean)/stdDeviation.
// Before the first interval is known the history is seeded with two
// intervals around FirstHeartbeatEstimate (± a quarter).
//
// A Detector is not safe for concurrent use; the caller (one actor) owns it.
package phi
