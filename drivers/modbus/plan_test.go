package modbus

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/otopcua/otopcua/deployment"
)

func ptr[T any](v T) *T { return &v }

// tg is a tag of table at addr of type typ, named after them.
func tg(table string, addr int, typ string) deployment.Tag {
	return deployment.Tag{Name: fmt.Sprintf("%s%d%s", table, addr, typ), Table: table, Address: &addr, Type: typ}
}

// run is n tags of table and type typ from addr, one after the other.
func run(table string, addr, n int, typ string) []deployment.Tag {
	var out []deployment.Tag
	for k := 0; k < n; k++ {
		out = append(out, tg(table, addr+k*Width(typ), typ))
	}
	return out
}

func cat(tss ...[]deployment.Tag) []deployment.Tag {
	var out []deployment.Tag
	for _, ts := range tss {
		out = append(out, ts...)
	}
	return out
}

// rq is a request, written compactly: "holding 0+125 [0..124]" style is
// produced by String below for failure messages.
func rq(table string, start, count int, tags ...int) Request {
	return Request{Table: table, Start: uint16(start), Count: uint16(count), Tags: tags}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func planString(p []Request) string {
	var b strings.Builder
	for _, r := range p {
		fmt.Fprintf(&b, "%s %d+%d %v\n", r.Table, r.Start, r.Count, r.Tags)
	}
	return b.String()
}

const (
	H = deployment.TableHolding
	I = deployment.TableInput
	C = deployment.TableCoil
	D = deployment.TableDiscrete
)

func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name string
		tags []deployment.Tag
		want []Request
	}{
		{"no tags", nil, nil},
		{"one register", []deployment.Tag{tg(H, 7, "int16")}, []Request{rq(H, 7, 1, 0)}},
		{"contiguous mixed widths", []deployment.Tag{tg(H, 0, "int16"), tg(H, 1, "float32"), tg(H, 3, "float64"), tg(H, 7, "uint16")},
			[]Request{rq(H, 0, 8, 0, 1, 2, 3)}},
		{"gap of 8 merges", []deployment.Tag{tg(H, 0, "int16"), tg(H, 9, "int16")}, []Request{rq(H, 0, 10, 0, 1)}},
		{"gap of 9 splits", []deployment.Tag{tg(H, 0, "int16"), tg(H, 10, "int16")}, []Request{rq(H, 0, 1, 0), rq(H, 10, 1, 1)}},
		{"gap after a wide tag", []deployment.Tag{tg(I, 0, "float64"), tg(I, 12, "int16")}, []Request{rq(I, 0, 13, 0, 1)}},
		{"125 registers in one", run(H, 0, 125, "uint16"), []Request{rq(H, 0, 125, seq(0, 124)...)}},
		{"126th register starts another", run(H, 0, 126, "uint16"), []Request{rq(H, 0, 125, seq(0, 124)...), rq(H, 125, 1, 125)}},
		{"300 contiguous registers are 3 requests", run(H, 0, 300, "int16"),
			[]Request{rq(H, 0, 125, seq(0, 124)...), rq(H, 125, 125, seq(125, 249)...), rq(H, 250, 50, seq(250, 299)...)}},
		{"a float64 never spans a split", run(H, 0, 32, "float64"), // 0..127
			[]Request{rq(H, 0, 124, seq(0, 30)...), rq(H, 124, 4, 31)}},
		{"a float32 at the boundary", cat(run(H, 0, 62, "float32"), []deployment.Tag{tg(H, 124, "float32")}), // 0..123, 124..125
			[]Request{rq(H, 0, 124, seq(0, 61)...), rq(H, 124, 2, 62)}},
		{"far, then near", []deployment.Tag{tg(H, 0, "int16"), tg(H, 120, "int16"), tg(H, 125, "int16")},
			[]Request{rq(H, 0, 1, 0), rq(H, 120, 6, 1, 2)}},
		{"duplicates share a request", []deployment.Tag{tg(H, 5, "int16"), tg(H, 5, "int16")}, []Request{rq(H, 5, 1, 0, 1)}},
		{"overlaps share a request", []deployment.Tag{tg(H, 11, "int16"), tg(H, 10, "float32")}, []Request{rq(H, 10, 2, 1, 0)}},
		{"a tag inside a wide one", []deployment.Tag{tg(H, 0, "float64"), tg(H, 1, "int16"), tg(H, 12, "int16")},
			[]Request{rq(H, 0, 13, 0, 1, 2)}}, // the gap is measured from the wide tag's end
		{"tables are separate and ordered", []deployment.Tag{tg(D, 0, "bool"), tg(C, 0, "bool"), tg(I, 0, "int16"), tg(H, 0, "int16"), tg(H, 1, "int16")},
			[]Request{rq(H, 0, 2, 3, 4), rq(I, 0, 1, 2), rq(C, 0, 1, 1), rq(D, 0, 1, 0)}},
		{"unsorted input", []deployment.Tag{tg(H, 9, "int16"), tg(H, 0, "int16"), tg(H, 5, "int16")},
			[]Request{rq(H, 0, 10, 1, 2, 0)}},
		{"2000 coils in one", run(C, 0, 2000, "bool"), []Request{rq(C, 0, 2000, seq(0, 1999)...)}},
		{"2001st coil starts another", run(C, 0, 2001, "bool"), []Request{rq(C, 0, 2000, seq(0, 1999)...), rq(C, 2000, 1, 2000)}},
		{"coil gaps", []deployment.Tag{tg(D, 0, "bool"), tg(D, 9, "bool"), tg(D, 19, "bool")},
			[]Request{rq(D, 0, 10, 0, 1), rq(D, 19, 1, 2)}},
		{"top of the address space", []deployment.Tag{tg(H, 65532, "float64"), tg(C, 65535, "bool")},
			[]Request{rq(H, 65532, 4, 0), rq(C, 65535, 1, 1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Plan(c.tags, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got\n%swant\n%s", planString(got), planString(c.want))
			}
		})
	}
}

func TestPlanRefuses(t *testing.T) {
	addr := func(a int) *int { return &a }
	for _, c := range []struct {
		name string
		tag  deployment.Tag
		want string
	}{
		{"no address", deployment.Tag{Name: "a", Table: H, Type: "int16"}, "no address"},
		{"negative address", deployment.Tag{Name: "a", Table: H, Type: "int16", Address: addr(-1)}, "address -1"},
		{"past the top", deployment.Tag{Name: "a", Table: H, Type: "int16", Address: addr(65536)}, "address 65536"},
		{"wide past the top", deployment.Tag{Name: "a", Table: H, Type: "float32", Address: addr(65535)}, "address 65535"},
		{"bool in registers", deployment.Tag{Name: "a", Table: I, Type: "bool", Address: addr(0)}, `type "bool"`},
		{"number in coils", deployment.Tag{Name: "a", Table: C, Type: "int16", Address: addr(0)}, `type "int16"`},
		{"unknown type", deployment.Tag{Name: "a", Table: H, Type: "int64", Address: addr(0)}, `type "int64"`},
		{"unknown table", deployment.Tag{Name: "a", Table: "memory", Type: "int16", Address: addr(0)}, `table "memory"`},
		{"no table", deployment.Tag{Name: "a", Type: "int16", Address: addr(0)}, `table ""`},
		{"unknown word order", deployment.Tag{Name: "a", Table: H, Type: "int32", Address: addr(0), WordOrder: "middle"}, `word order "middle"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Plan([]deployment.Tag{tg(H, 0, "int16"), c.tag}, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `tag 1 ("a")`) {
				t.Fatalf("Plan: %v, want an error naming tag 1 and %q", err, c.want)
			}
		})
	}
	for _, lim := range []Limits{{3, 2000, 8}, {126, 2000, 8}, {125, 0, 8}, {125, 2001, 8}, {125, 2000, -1}} {
		if _, err := Plan(nil, lim); err == nil {
			t.Errorf("Plan with limits %+v: no error", lim)
		}
	}
}

func TestSplitAtGaps(t *testing.T) {
	tags := []deployment.Tag{tg(H, 0, "int16"), tg(H, 5, "float32"), tg(H, 7, "int16"), tg(H, 12, "int16"), tg(H, 12, "int16")}
	plan, err := Plan(tags, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Request{rq(H, 0, 13, 0, 1, 2, 3, 4)}; !reflect.DeepEqual(plan, want) {
		t.Fatalf("plan\n%s", planString(plan))
	}
	got := SplitAtGaps(plan[0], tags)
	want := []Request{rq(H, 0, 1, 0), rq(H, 5, 3, 1, 2), rq(H, 12, 1, 3, 4)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%swant\n%s", planString(got), planString(want))
	}
	for _, r := range got {
		if again := SplitAtGaps(r, tags); !reflect.DeepEqual(again, []Request{r}) {
			t.Fatalf("a request without gaps split into\n%s", planString(again))
		}
	}
	bad := rq(H, 0, 1, 99)
	if got := SplitAtGaps(bad, tags); !reflect.DeepEqual(got, []Request{bad}) {
		t.Fatalf("SplitAtGaps of a request naming no tag: %v", got)
	}
}

// genTags draws tags in a small address window so that they touch, gap and
// overlap; with distinct, no two tags of a table overlap.
func genTags(t *rapid.T, distinct bool) []deployment.Tag {
	n := rapid.IntRange(0, 60).Draw(t, "n")
	used := map[string]map[int]bool{}
	var tags []deployment.Tag
	for k := 0; k < n; k++ {
		table := rapid.SampledFrom([]string{H, I, C, D}).Draw(t, "table")
		typ := "bool"
		if table == H || table == I {
			typ = rapid.SampledFrom([]string{"int16", "uint16", "int32", "uint32", "float32", "float64"}).Draw(t, "type")
		}
		w := Width(typ)
		var addr int
		if rapid.IntRange(0, 9).Draw(t, "top") == 0 {
			addr = 65536 - w - rapid.IntRange(0, 20).Draw(t, "fromTop")
		} else {
			addr = rapid.IntRange(0, 300).Draw(t, "addr")
		}
		if distinct {
			if used[table] == nil {
				used[table] = map[int]bool{}
			}
			free := true
			for a := addr; a < addr+w; a++ {
				free = free && !used[table][a]
			}
			if !free {
				continue
			}
			for a := addr; a < addr+w; a++ {
				used[table][a] = true
			}
		}
		tag := tg(table, addr, typ)
		tag.WordOrder = rapid.SampledFrom([]string{"", "big", "little"}).Draw(t, "order")
		tags = append(tags, tag)
	}
	return tags
}

func genLimits(t *rapid.T) Limits {
	if rapid.Bool().Draw(t, "defaultLimits") {
		return DefaultLimits
	}
	return Limits{
		MaxRegisters: rapid.IntRange(4, 125).Draw(t, "maxRegisters"),
		MaxBits:      rapid.IntRange(1, 2000).Draw(t, "maxBits"),
		MaxGap:       rapid.IntRange(0, 12).Draw(t, "maxGap"),
	}
}

// checkPlan is every property a plan must have, whatever the tags.
func checkPlan(t *rapid.T, tags []deployment.Tag, lim Limits, plan []Request) {
	seen := make([]int, len(tags))
	for _, r := range plan {
		limit := lim.MaxRegisters
		if isBitTable(r.Table) {
			limit = lim.MaxBits
		}
		if r.Count < 1 || int(r.Count) > limit || r.End() > 0xffff {
			t.Fatalf("request %s %d+%d outside limit %d", r.Table, r.Start, r.Count, limit)
		}
		lo, hi := 1<<20, -1
		var spans []span
		for _, i := range r.Tags {
			seen[i]++
			s, _ := spanOf(tags[i])
			if tags[i].Table != r.Table || s.start < int(r.Start) || s.end > r.End() {
				t.Fatalf("tag %d (%s %d–%d) not inside request %s %d+%d", i, tags[i].Table, s.start, s.end, r.Table, r.Start, r.Count)
			}
			lo, hi = min(lo, s.start), max(hi, s.end)
			spans = append(spans, s)
		}
		if lo != int(r.Start) || hi != r.End() {
			t.Fatalf("request %s %d+%d reads past its tags (%d–%d)", r.Table, r.Start, r.Count, lo, hi)
		}
		sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
		end := spans[0].end
		for _, s := range spans[1:] {
			if gap := s.start - end - 1; gap > lim.MaxGap {
				t.Fatalf("request %s %d+%d spans a gap of %d > %d", r.Table, r.Start, r.Count, gap, lim.MaxGap)
			}
			end = max(end, s.end)
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Fatalf("tag %d (%s %d %s) is in %d requests", i, tags[i].Table, *tags[i].Address, tags[i].Type, n)
		}
	}
}

// fewest is the brute-force least number of requests for the tags of one
// table that do not overlap: a dynamic program over every split of the
// tags, sorted by address, into runs that keep the merge rule.
func fewest(tags []deployment.Tag, table string, lim Limits) int {
	var ss []span
	for _, tag := range tags {
		if tag.Table == table {
			s, _ := spanOf(tag)
			ss = append(ss, s)
		}
	}
	sort.Slice(ss, func(a, b int) bool { return ss[a].start < ss[b].start })
	limit := lim.limit(table)
	feasible := func(i, j int) bool { // run ss[i..j]
		if ss[j].end-ss[i].start+1 > limit {
			return false
		}
		for k := i + 1; k <= j; k++ {
			if ss[k].start-ss[k-1].end-1 > lim.MaxGap {
				return false
			}
		}
		return true
	}
	dp := make([]int, len(ss)+1) // dp[j]: fewest for ss[:j]
	for j := 1; j <= len(ss); j++ {
		dp[j] = 1 << 30
		for i := 1; i <= j; i++ {
			if feasible(i-1, j-1) && dp[i-1]+1 < dp[j] {
				dp[j] = dp[i-1] + 1
			}
		}
	}
	return dp[len(ss)]
}

// TestPlanProperties: every tag is in exactly one request, inside it; no
// request exceeds the limits, reads past its tags or spans a larger gap;
// and for tags that do not overlap, no valid cover has fewer requests.
func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		distinct := rapid.Bool().Draw(t, "distinct")
		tags := genTags(t, distinct)
		lim := genLimits(t)
		plan, err := Plan(tags, lim)
		if err != nil {
			t.Fatal(err)
		}
		checkPlan(t, tags, lim, plan)
		again, _ := Plan(tags, lim)
		if !reflect.DeepEqual(plan, again) {
			t.Fatal("Plan is not deterministic")
		}
		if !distinct {
			return
		}
		for _, table := range tableOrder {
			got := 0
			for _, r := range plan {
				if r.Table == table {
					got++
				}
			}
			if want := fewest(tags, table, lim); got != want {
				t.Fatalf("%s: %d requests, the fewest is %d\n%s", table, got, want, planString(plan))
			}
		}
	})
}

// TestSplitAtGapsProperties: the parts of a request cover exactly its tags,
// each once, inside the request, and read no address no tag uses.
func TestSplitAtGapsProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tags := genTags(t, false)
		plan, _ := Plan(tags, DefaultLimits)
		var all []Request
		for _, r := range plan {
			parts := SplitAtGaps(r, tags)
			for _, p := range parts {
				if p.Table != r.Table || p.Start < r.Start || p.End() > r.End() {
					t.Fatalf("part %s %d+%d outside %s %d+%d", p.Table, p.Start, p.Count, r.Table, r.Start, r.Count)
				}
			}
			all = append(all, parts...)
		}
		checkPlan(t, tags, Limits{MaxRegisters: 125, MaxBits: 2000, MaxGap: 0}, all)
	})
}
