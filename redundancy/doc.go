// Package redundancy turns cluster membership and live health into what OPC
// UA clients see of a redundant set: each node's role (Primary, Secondary,
// Detached) within its application ClusterId and its Server.ServiceLevel byte.
//
// This package holds the pure decision cores; they import no clock and do no
// I/O. Callers gather inputs at one instant and pass that instant as Now:
//
//  1. ComputeServiceLevel maps Inputs to 0/100/200/240/250 (or the legacy
//     role-only mapping before the first DB health reply).
//  2. Fresh, ProbeOk and Stale are the 30-second freshness rules, functions
//     of timestamps only.
package redundancy
