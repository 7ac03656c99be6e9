package history

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// crashDirEnv names the store directory of TestCrashChild, set only by
// TestAcknowledgedSamplesSurviveSIGKILL.
const crashDirEnv = "OTOPCUA_HISTORY_CRASH_DIR"

const crashTags = 50

// crashBatch is batch n of the crash test: one sample of every tag at
// n seconds, the value n + tag.
func crashBatch(n int) []Record {
	out := make([]Record, crashTags)
	for i := range out {
		out[i] = Record{Tag: fmt.Sprintf("d/t%02d", i), Sample: Sample{At: int64(n) * sec, Value: float64(n + i)}}
	}
	return out
}

// TestCrashChild is the process TestAcknowledgedSamplesSurviveSIGKILL
// kills: it appends batches, compacting and dropping the journal as the
// recorder does, and prints the number of each batch Append returned for.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestAcknowledgedSamplesSurviveSIGKILL")
	}
	s, err := Open(StoreOptions{Dir: dir, BlockSamples: 16, JournalBatches: 8})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; ; n++ {
		if err := s.Append(crashBatch(n)); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("acked %d\n", n)
		if n%5 == 0 {
			for _, tag := range s.Due(math.MinInt64) {
				if err := s.Compact(tag, false); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.DropJournal(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestAcknowledgedSamplesSurviveSIGKILL kills a process appending to a
// store with SIGKILL and finds, on reopening, every sample of every batch
// whose Append had returned — whether it was still in the journal, in a
// saved head or in a block.
func TestAcknowledgedSamplesSurviveSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := -1
	lines := bufio.NewScanner(out)
	deadline := time.Now().Add(30 * time.Second)
	for acked < 300 && time.Now().Before(deadline) && lines.Scan() {
		if n, ok := strings.CutPrefix(lines.Text(), "acked "); ok {
			acked, _ = strconv.Atoi(n)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if acked < 300 {
		t.Fatalf("the child acknowledged %d batches before the deadline", acked+1)
	}
	s := open(t, dir, 16)
	defer s.Close()
	for i := range crashTags {
		tag := fmt.Sprintf("d/t%02d", i)
		got := readAll(t, s, tag, math.MinInt64, math.MaxInt64)
		if len(got) < acked+1 {
			t.Fatalf("%s: %d samples after the kill, %d acknowledged", tag, len(got), acked+1)
		}
		for n, x := range got[:acked+1] {
			if x.At != int64(n)*sec || x.Value != float64(n+i) {
				t.Fatalf("%s: sample %d is %+v", tag, n, x)
			}
		}
	}
}
