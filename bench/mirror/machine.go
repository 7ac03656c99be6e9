package main

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// machineCPU reads the machine's busy and total jiffies from the "cpu"
// line of /proc/stat (idle and iowait are not busy; guest time is already
// in user time). Zeros when it cannot be read.
func machineCPU() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] != "cpu" {
			continue
		}
		for i, s := range f[1:min(len(f), 9)] { // user … steal
			v, _ := strconv.ParseUint(s, 10, 64)
			total += v
			if i != 3 && i != 4 {
				busy += v
			}
		}
		return busy, total
	}
	return 0, 0
}

// machinePct is the machine's busy share between two readings, in % of
// one core (200 = both cores of a 2-core machine busy).
func machinePct(busy0, total0, busy1, total1 uint64) float64 {
	if total1 <= total0 {
		return 0
	}
	return float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU()) * 100
}
