package main

import "runtime"

// machinePct is the machine's busy share between two readings of
// measure.MachineCPU, in % of one core (200 = both cores of a 2-core
// machine busy).
func machinePct(busy0, total0, busy1, total1 uint64) float64 {
	if total1 <= total0 {
		return 0
	}
	return float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU()) * 100
}
