package main

import (
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	seq := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = n - i // descending: summarize sorts
		}
		return out
	}
	cases := []struct {
		name                  string
		in                    []time.Duration
		median, p90, p99, max int
	}{
		{"one", ms(7), 7, 7, 7, 7},
		{"two", ms(9, 3), 3, 9, 9, 9},
		{"ten", ms(seq(10)...), 5, 9, 10, 10},
		{"twenty: p99 is the slowest", ms(seq(20)...), 10, 18, 20, 20},
		{"hundred", ms(seq(100)...), 50, 90, 99, 100},
		{"ties", ms(5, 5, 5, 1), 5, 5, 5, 5},
	}
	for _, c := range cases {
		st, ok := summarize(c.in)
		want := stats{median: ms(c.median)[0], p90: ms(c.p90)[0], p99: ms(c.p99)[0], max: ms(c.max)[0]}
		if !ok || st != want {
			t.Errorf("%s: %+v %v, want %+v", c.name, st, ok, want)
		}
	}
	if _, ok := summarize(nil); ok {
		t.Error("summarize(nil) reported figures")
	}
	in := ms(3, 1, 2)
	summarize(in)
	if in[0] != 3*time.Millisecond {
		t.Error("summarize sorted its argument in place")
	}
}

func TestReplaceSection(t *testing.T) {
	sec := "## Client failover time\n\nnew body\n"
	cases := []struct{ name, doc, want string }{
		{"empty file", "", sec},
		{"appended after the last section", "# Benchmarks\n\n## Other\n\ntext\n", "# Benchmarks\n\n## Other\n\ntext\n\n" + sec},
		{"appended to a file without a final newline", "# B\ntext", "# B\ntext\n\n" + sec},
		{"replaced at the end", "# B\n\n## Client failover time\n\nold\n| table |\n", "# B\n\n" + sec},
		{"replaced in the middle, the next section kept", "# B\n\n## Client failover time\n\nold\n### sub\nold too\n\n## Next\n\nkept\n",
			"# B\n\n" + sec + "\n## Next\n\nkept\n"},
		{"a heading that only starts the same is not the section", "## Client failover time (old)\n\nkept\n", "## Client failover time (old)\n\nkept\n\n" + sec},
	}
	for _, c := range cases {
		if got := replaceSection(c.doc, sec); got != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
		// Idempotent: writing the same section again changes nothing.
		once := replaceSection(c.doc, sec)
		if twice := replaceSection(once, sec); twice != once {
			t.Errorf("%s: not idempotent:\n%q\n%q", c.name, once, twice)
		}
	}
}

func TestResultTable(t *testing.T) {
	res := results{
		failover:  []time.Duration{100 * time.Millisecond, 300 * time.Millisecond},
		firstNote: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond},
		primary:   []time.Duration{time.Second, 3 * time.Second},
		failed:    []string{"boom\nline two"},
	}
	tab := resultTable(res, 3)
	for _, want := range []string{"| 100 ms | 300 ms | 300 ms | 300 ms | 2/3 |", "| 200 ms | 400 ms | 400 ms | 400 ms | 2/3 |", "failed trial: boom line two"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	if v := verdict(res); !strings.Contains(v, "300 ms: met") || !strings.Contains(v, "400 ms: met") {
		t.Errorf("verdict %q", v)
	}
	res.firstNote = append(res.firstNote, 2500*time.Millisecond)
	if v := verdict(res); !strings.Contains(v, "2500 ms: **not met**") {
		t.Errorf("verdict %q", v)
	}
}
