// Command historyread measures HistoryRead of process history end to end
// (issue 29, docs/benchmarks.md "Process history"): a real `otopcua host`
// process whose store holds -values values of one tag (100 ms apart, a
// slowly changing analog, written before the node starts by
// internal/histfill), read by gopcua's client over loopback.
//
//   - raw: ReadRawModified of every value, -per values a call, following
//     continuation points to the end; the time from the first request to
//     the last response, and the server's CPU time meanwhile.
//   - processed: ReadProcessed Average over the last day of the history
//     (864,000 values at 100 ms) per hour, per minute and per second,
//     continuation points followed; the time of each.
//   - node-opcua: the same raw read against node-opcua's own server and
//     historian (tests/interop/historian.mjs: node-opcua-server 2.186,
//     its in-memory VariableHistorian) holding the same values; the same
//     client, the same -per.
//
// Each read runs -runs times on one connection; the table shows every
// run, the JSON line the median.
//
// Usage:
//
//	go run ./bench/historyread                          # 1,000,000 values, 3 runs
//	go run ./bench/historyread -values 2000000 -only raw
//	go run ./bench/historyread -values 20000 -runs 1    # the short variant (go test)
//
// node-opcua comes from tests/interop (npm ci there). Every process it
// starts is stopped before it exits, Ctrl-C included.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/tests/procs"
)

// settings are the command's flags.
type settings struct {
	values int
	per    int
	runs   int
	only   map[string]bool
}

func main() {
	var s settings
	flag.IntVar(&s.values, "values", 1000000, "values in the history (100 ms apart)")
	flag.IntVar(&s.per, "per", 10000, "NumValuesPerNode of the raw reads")
	flag.IntVar(&s.runs, "runs", 3, "reads of each kind")
	only := flag.String("only", "raw,processed,node-opcua", "which reads (comma-separated)")
	flag.Parse()
	if s.values < 10 || s.per < 1 || s.runs < 1 {
		log.Fatal("-values must be at least 10, -per and -runs at least 1")
	}
	s.only = map[string]bool{}
	for _, o := range strings.Split(*only, ",") {
		s.only[strings.TrimSpace(o)] = true
	}
	go procs.StopOnSignal()
	fmt.Printf("%s; %d values, %d per call, %d runs\n\n", measure.Machine(time.Now()), s.values, s.per, s.runs)
	var rows []row
	if err := procs.Run("bench-historyread", func(t testing.TB) { rows = run(t, s) }); err != nil {
		log.Fatal(err)
	}
	printRows(os.Stdout, rows)
}
