package history

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"

	"github.com/cockroachdb/pebble/v2/vfs"
)

const sec = 10_000_000 // ticks

func open(t testing.TB, dir string, per int) *Store {
	t.Helper()
	s, err := Open(StoreOptions{Dir: dir, BlockSamples: per})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func readAll(t testing.TB, s *Store, tag string, from, to int64) []Sample {
	t.Helper()
	var out []Sample
	if err := s.Read(tag, from, to, func(x Sample) bool { out = append(out, x); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func recs(tag string, from, n int, value func(i int) float64) []Record {
	out := make([]Record, n)
	for i := range n {
		out[i] = Record{Tag: tag, Sample: Sample{At: int64(from+i) * sec, Value: value(i)}}
	}
	return out
}

func TestAppendCompactRead(t *testing.T) {
	s := open(t, t.TempDir(), 4)
	defer s.Close()
	if err := s.Append(recs("press1/Temperature", 0, 10, func(i int) float64 { return float64(i) / 2 })); err != nil {
		t.Fatal(err)
	}
	if due := s.Due(math.MinInt64); !slices.Equal(due, []string{"press1/Temperature"}) {
		t.Fatalf("due %v", due)
	}
	want := readAll(t, s, "press1/Temperature", math.MinInt64, math.MaxInt64)
	if len(want) != 10 || want[3].Value != 1.5 || want[9].At != 9*sec {
		t.Fatalf("before compaction: %v", want)
	}
	if err := s.Compact("press1/Temperature", false); err != nil {
		t.Fatal(err)
	}
	if st := s.tags[s.ids["press1/Temperature"]]; len(st.head) != 2 || st.lastBlock != 7*sec {
		t.Fatalf("after compaction: head %d, last block %d", len(st.head), st.lastBlock)
	}
	if got := readAll(t, s, "press1/Temperature", math.MinInt64, math.MaxInt64); !slices.Equal(got, want) {
		t.Fatalf("after compaction: %v, want %v", got, want)
	}
	if got := readAll(t, s, "press1/Temperature", 3*sec, 6*sec); !slices.Equal(got, want[3:6]) {
		t.Fatalf("[3 s, 6 s): %v", got)
	}
	if got := readAll(t, s, "press1/Other", 0, math.MaxInt64); len(got) != 0 {
		t.Fatalf("unknown tag: %v", got)
	}
}

// TestOneSamplePerIdentity: the same (tag, time) given twice, with other
// values, keeps the same one whatever the order, before and after
// compaction, and late samples merge into the blocks.
func TestOneSamplePerIdentity(t *testing.T) {
	a, b := open(t, t.TempDir(), 3), open(t, t.TempDir(), 3)
	defer a.Close()
	defer b.Close()
	first := recs("t", 0, 7, func(i int) float64 { return float64(i) })
	second := recs("t", 2, 3, func(i int) float64 { return -1 }) // 2 s, 3 s, 4 s again
	second[1].Status = 0x80320000
	late := recs("t", -2, 1, func(int) float64 { return 9 })
	for _, step := range [][]Record{first, second, late} {
		if err := a.Append(step); err != nil {
			t.Fatal(err)
		}
		if err := a.Compact("t", false); err != nil {
			t.Fatal(err)
		}
	}
	for _, step := range [][]Record{late, second, first} {
		if err := b.Append(step); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Compact("t", true); err != nil {
		t.Fatal(err)
	}
	ga, gb := readAll(t, a, "t", math.MinInt64, math.MaxInt64), readAll(t, b, "t", math.MinInt64, math.MaxInt64)
	if !slices.Equal(ga, gb) {
		t.Fatalf("the stores differ:\n%v\n%v", ga, gb)
	}
	// -2 s, then 0 … 6 s: the second values (-1) lose everywhere, at 3 s
	// by their Bad status, at 2 s and 4 s by their value bits (a negative
	// float64's bits sort after a positive one's).
	want := []float64{9, 0, 1, 2, 3, 4, 5, 6}
	if len(ga) != len(want) {
		t.Fatalf("%v", ga)
	}
	for i, x := range ga {
		if x.Value != want[i] {
			t.Fatalf("sample %d: %v, want %v (%v)", i, x.Value, want[i], ga)
		}
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir, 4)
	if err := s.Append(append(recs("a", 0, 9, func(i int) float64 { return float64(i) }), recs("b", 0, 2, func(int) float64 { return 1 })...)); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact("a", false); err != nil {
		t.Fatal(err)
	}
	want := readAll(t, s, "a", math.MinInt64, math.MaxInt64)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(recs("a", 20, 1, func(int) float64 { return 0 })); !errors.Is(err, ErrClosed) {
		t.Fatalf("Append after Close: %v", err)
	}
	s = open(t, dir, 4)
	defer s.Close()
	if got := readAll(t, s, "a", math.MinInt64, math.MaxInt64); !slices.Equal(got, want) {
		t.Fatalf("after reopening: %v, want %v", got, want)
	}
	if !slices.Equal(s.Tags(), []string{"a", "b"}) {
		t.Fatalf("tags %v", s.Tags())
	}
	if st := s.tags[s.ids["a"]]; len(st.head) != 1 || st.head[0].At != 8*sec || st.lastBlock != 7*sec {
		t.Fatalf("state of a after reopening: %+v", st)
	}
	if err := s.Append(recs("c", 0, 1, func(int) float64 { return 0 })); err != nil || s.ids["c"] == s.ids["a"] || s.ids["c"] == s.ids["b"] {
		t.Fatalf("a new tag after reopening: id %d (a %d, b %d), %v", s.ids["c"], s.ids["a"], s.ids["b"], err)
	}
}

// TestStoreMatchesModel: any run of appends (late and repeated samples
// included), compactions and reopenings reads back as a model that keeps,
// per identity, the sample sorting first.
func TestStoreMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fs := vfs.NewCrashableMem()
		per := rapid.IntRange(1, 6).Draw(rt, "per")
		reopen := func() *Store {
			s, err := Open(StoreOptions{Dir: "h", BlockSamples: per, JournalBatches: 3, fs: fs})
			if err != nil {
				rt.Fatal(err)
			}
			return s
		}
		s := reopen()
		defer func() { s.Close() }()
		model := map[string]map[int64]Sample{}
		tags := []string{"x", "y"}
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 0, 1, 2:
				var batch []Record
				for range rapid.IntRange(1, 8).Draw(rt, "n") {
					r := Record{Tag: rapid.SampledFrom(tags).Draw(rt, "tag"), Sample: Sample{
						At:     int64(rapid.IntRange(-20, 60).Draw(rt, "at")) * sec,
						Value:  float64(rapid.IntRange(-3, 3).Draw(rt, "v")),
						Status: rapid.SampledFrom([]uint32{0, 0x80320000}).Draw(rt, "st"),
					}}
					batch = append(batch, r)
					m := model[r.Tag]
					if m == nil {
						m = map[int64]Sample{}
						model[r.Tag] = m
					}
					if old, ok := m[r.At]; !ok || less(r.Sample, old) {
						m[r.At] = r.Sample
					}
				}
				if err := s.Append(batch); err != nil {
					rt.Fatal(err)
				}
			case 3, 4:
				if err := s.Compact(rapid.SampledFrom(tags).Draw(rt, "tag"), rapid.Bool().Draw(rt, "all")); err != nil {
					rt.Fatal(err)
				}
			case 5:
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				s = reopen()
			case 6:
				if err := s.DropJournal(); err != nil {
					rt.Fatal(err)
				}
			case 7: // a crash: only what was synced is left
				crashed := fs.CrashClone(vfs.CrashCloneCfg{})
				_ = s.Close()
				fs = crashed
				s = reopen()
			}
			for _, tag := range tags {
				var want []Sample
				for _, x := range model[tag] {
					want = append(want, x)
				}
				slices.SortFunc(want, func(a, b Sample) int { return int(a.At/sec - b.At/sec) })
				got := readAll(t, s, tag, math.MinInt64, math.MaxInt64)
				if !slices.Equal(got, want) {
					rt.Fatalf("tag %s:\n got %v\nwant %v", tag, got, want)
				}
				from, to := int64(rapid.IntRange(-25, 65).Draw(rt, "from"))*sec, int64(rapid.IntRange(-25, 65).Draw(rt, "to"))*sec
				var part []Sample
				for _, x := range want {
					if x.At >= from && x.At < to {
						part = append(part, x)
					}
				}
				if got := readAll(t, s, tag, from, to); !slices.Equal(got, part) {
					rt.Fatalf("tag %s [%d, %d):\n got %v\nwant %v", tag, from/sec, to/sec, got, part)
				}
			}
		}
	})
}

func less(a, b Sample) bool {
	if a.Status != b.Status {
		return a.Status < b.Status
	}
	return math.Float64bits(a.Value) < math.Float64bits(b.Value)
}

func BenchmarkAppend(b *testing.B) {
	s := open(b, b.TempDir(), 256)
	defer s.Close()
	batch := make([]Record, 1000)
	for i := range batch {
		batch[i].Tag = fmt.Sprintf("dev/tag%d", i)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i := range batch {
			batch[i].At = int64(n) * sec
			batch[i].Value = float64(n % 97)
		}
		n++
		if err := s.Append(batch); err != nil {
			b.Fatal(err)
		}
		if n%256 == 0 {
			for _, tag := range s.Due(math.MinInt64) {
				if err := s.Compact(tag, false); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.ReportMetric(float64(b.N*len(batch))/b.Elapsed().Seconds(), "samples/s")
}

func TestExtent(t *testing.T) {
	s := open(t, t.TempDir(), 3)
	defer s.Close()
	if _, _, ok, err := s.Extent("t"); ok || err != nil {
		t.Fatalf("empty: %v %v", ok, err)
	}
	if err := s.Append(recs("t", 5, 7, func(i int) float64 { return 1 })); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		first, last, ok, err := s.Extent("t")
		if !ok || err != nil || first != 5*sec || last != 11*sec {
			t.Fatalf("%s: %d %d %v %v", when, first/sec, last/sec, ok, err)
		}
	}
	check("head only")
	if err := s.Compact("t", false); err != nil {
		t.Fatal(err)
	}
	check("blocks and head")
	if err := s.Compact("t", true); err != nil {
		t.Fatal(err)
	}
	check("blocks only")
}

// TestReadsDuringCompaction: a read running beside appends, compactions
// and journal drops sees every sample acknowledged before it began, in
// order, each time once.
func TestReadsDuringCompaction(t *testing.T) {
	s := open(t, t.TempDir(), 8)
	defer s.Close()
	var acked atomic.Int64
	done := make(chan error)
	go func() {
		var err error
		for i := 0; i < 400 && err == nil; i++ {
			err = s.Append(recs("t", i, 1, func(int) float64 { return float64(i) }))
			acked.Store(int64(i + 1))
			if err == nil && i%7 == 0 {
				err = errors.Join(s.Compact("t", i%14 == 0), s.DropJournal())
			}
		}
		done <- err
	}()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		default:
		}
		n := acked.Load()
		got := readAll(t, s, "t", math.MinInt64, math.MaxInt64)
		if int64(len(got)) < n {
			t.Fatalf("%d samples read, %d acknowledged before", len(got), n)
		}
		for i, x := range got {
			if x.At != int64(i)*sec {
				t.Fatalf("sample %d at %d", i, x.At)
			}
		}
		if x, ok, err := s.Before("t", math.MaxInt64); n > 0 && (err != nil || !ok || x.At < (n-1)*sec) {
			t.Fatalf("Before: %+v %v %v, %d acknowledged", x, ok, err, n)
		}
	}
}
