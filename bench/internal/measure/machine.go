package measure

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// MachineCPU reads the machine's busy and total jiffies from /proc/stat
// (see ParseMachineCPU). Zeros when it cannot be read.
func MachineCPU() (busy, total uint64) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0
	}
	return ParseMachineCPU(b)
}

// ParseMachineCPU returns the busy and total jiffies of the "cpu" line (all
// CPUs) of a /proc/stat text: total is user, nice, system, idle, iowait,
// irq, softirq and steal; busy is total less idle and iowait. Guest time is
// left out, as it is already counted in user and nice. Zeros when the text
// has no such line.
func ParseMachineCPU(stat []byte) (busy, total uint64) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || f[0] != "cpu" {
			continue
		}
		for i, s := range f[1:min(len(f), 9)] { // user … steal
			v, _ := strconv.ParseUint(s, 10, 64)
			total += v
			if i != 3 && i != 4 { // idle, iowait
				busy += v
			}
		}
		return busy, total
	}
	return 0, 0
}
