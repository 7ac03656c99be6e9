package memtrim

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"testing"
)

func TestReadOnlySpans(t *testing.T) {
	const exe = "/opt/otopcua/otopcua"
	maps := `00400000-016b4000 r-xp 00000000 00:2a 1234 /opt/otopcua/otopcua
016b4000-02dab000 r--p 012b4000 00:2a 1234 /opt/otopcua/otopcua
02dab000-02e98000 rw-p 029ab000 00:2a 1234 /opt/otopcua/otopcua
02e98000-03000000 rw-p 00000000 00:00 0
7f00000000-7f00001000 r--s 00000000 00:2a 99 /opt/otopcua/otopcua
7f0cc24c8000-7f0cc261e000 r-xp 00028000 08:01 777 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0cc2700000-7f0cc2800000 r-xp 00000000 00:2a 1234 /opt/otopcua/otopcua (deleted)
zz-01 r-xp 00000000 00:2a 1234 /opt/otopcua/otopcua
02000000-01000000 r-xp 00000000 00:2a 1234 /opt/otopcua/otopcua
`
	got := ReadOnlySpans(maps, exe)
	want := []Span{{0x400000, 0x16b4000}, {0x16b4000, 0x2dab000}}
	if len(got) != len(want) {
		t.Fatalf("spans %x, want %x (code and read-only data only: not the writable data, a shared mapping, another file, a deleted one or a bad line)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %x, want %x", i, got[i], want[i])
		}
	}
	if n := want[0].Len(); n != 0x12b4000 {
		t.Errorf("Len = %#x", n)
	}
}

// TestReleaseOwnProcess releases the test binary's own code and read-only
// data: the pages mapped from the executable fall, and the process goes on
// running the code it dropped (this test's next lines).
func TestReleaseOwnProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the executable's mappings are released on Linux only")
	}
	before := rssFile(t)
	res := Release()
	after := rssFile(t)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Spans) < 2 || res.Released == 0 {
		t.Fatalf("released %d bytes in %d spans, want the code and the read-only data", res.Released, len(res.Spans))
	}
	if after >= before {
		t.Errorf("RssFile %d kB after the release, %d kB before: nothing was dropped", after, before)
	}
	t.Logf("RssFile %d kB → %d kB, %d spans, %d kB released", before, after, len(res.Spans), res.Released/1024)
	// Run code again after the release: the pages come back on demand.
	if again := Release(); again.Err != nil || again.Released != res.Released {
		t.Errorf("second release: %d bytes, %v; want %d again", again.Released, again.Err, res.Released)
	}
}

func rssFile(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		if rest, ok := bytes.CutPrefix(line, []byte("RssFile:")); ok {
			f := bytes.Fields(rest)
			kb, err := strconv.ParseUint(string(f[0]), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile line")
	return 0
}
