package redundancy

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var tEpoch = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

func ms(t time.Time) uint64 { return uint64(t.UnixMilli()) }

func TestNextEpoch(t *testing.T) {
	tests := []struct {
		name string
		prev uint64
		now  time.Time
		want uint64
	}{
		{"first epoch is the clock in ms", 0, tEpoch, ms(tEpoch)},
		{"later change: the clock", ms(tEpoch), tEpoch.Add(time.Second), ms(tEpoch) + 1000},
		{"two changes in one millisecond: +1", ms(tEpoch), tEpoch, ms(tEpoch) + 1},
		{"clock behind the book (skew, or set back): +1", ms(tEpoch) + 3_600_000, tEpoch, ms(tEpoch) + 3_600_001},
		{"clock before 1970: +1", 7, time.Unix(-5, 0), 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NextEpoch(tt.prev, tt.now); got != tt.want {
				t.Fatalf("NextEpoch(%d, %v) = %d, want %d", tt.prev, tt.now, got, tt.want)
			}
		})
	}
}

func el(primary string) Election { return Election{Primary: primary, Roles: map[string]Role{}} }

func TestAdvanceEpochs(t *testing.T) {
	now := tEpoch.Add(time.Hour)
	tests := []struct {
		name      string
		book      EpochBook
		elections map[string]Election
		uids      map[string]uint64
		want      EpochBook
	}{
		{
			name:      "first Primary of a ClusterId",
			book:      EpochBook{},
			elections: map[string]Election{"a": el("n1:1")},
			uids:      map[string]uint64{"n1:1": 11},
			want:      EpochBook{"a": {ms(now), "n1:1", 11}},
		},
		{
			name:      "same Primary, same incarnation: unchanged",
			book:      EpochBook{"a": {5, "n1:1", 11}},
			elections: map[string]Election{"a": el("n1:1")},
			uids:      map[string]uint64{"n1:1": 11},
			want:      EpochBook{"a": {5, "n1:1", 11}},
		},
		{
			name:      "another Primary: advanced",
			book:      EpochBook{"a": {ms(now) + 50, "n1:1", 11}},
			elections: map[string]Election{"a": el("n2:1")},
			uids:      map[string]uint64{"n2:1": 22},
			want:      EpochBook{"a": {ms(now) + 51, "n2:1", 22}},
		},
		{
			name:      "a new incarnation at the Primary's address: advanced",
			book:      EpochBook{"a": {5, "n1:1", 11}},
			elections: map[string]Election{"a": el("n1:1")},
			uids:      map[string]uint64{"n1:1": 12},
			want:      EpochBook{"a": {ms(now), "n1:1", 12}},
		},
		{
			name:      "Primary gone, none left: advanced (the old owner is fenced)",
			book:      EpochBook{"a": {5, "n1:1", 11}},
			elections: map[string]Election{"a": el("")},
			want:      EpochBook{"a": {ms(now), "", 0}},
		},
		{
			name:      "never a Primary: epoch 0",
			book:      EpochBook{},
			elections: map[string]Election{"a": el("")},
			want:      EpochBook{"a": {}},
		},
		{
			name:      "ClusterIds are independent; an absent one keeps its epoch",
			book:      EpochBook{"a": {5, "n1:1", 11}, "b": {9, "m1:1", 31}, "gone": {77, "g:1", 1}},
			elections: map[string]Election{"a": el("n1:1"), "b": el("m2:1")},
			uids:      map[string]uint64{"n1:1": 11, "m2:1": 32},
			want:      EpochBook{"a": {5, "n1:1", 11}, "b": {ms(now), "m2:1", 32}, "gone": {77, "g:1", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := fmt.Sprint(tt.book)
			got := AdvanceEpochs(tt.book, tt.elections, tt.uids, now)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if fmt.Sprint(tt.book) != before {
				t.Fatalf("the input book was modified: %v, was %v", tt.book, before)
			}
		})
	}
}

// TestEpochsMonotonic: whatever the sequence of elections, and whatever the
// clock does (including going back), a ClusterId's epoch never decreases,
// and it strictly increases exactly when its Primary changes.
func TestEpochsMonotonic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		book := EpochBook{}
		now := tEpoch
		primaries := []string{"", "n1:1", "n2:1", "n3:1"}
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(-5000, 5000).Draw(t, "dt")) * time.Millisecond)
			elections := map[string]Election{}
			uids := map[string]uint64{}
			for _, cid := range []string{"a", "b"} {
				if rapid.Bool().Draw(t, "present") {
					p := rapid.SampledFrom(primaries).Draw(t, "primary")
					elections[cid] = el(p)
					uids[p] = uint64(rapid.IntRange(1, 2).Draw(t, "uid"))
				}
			}
			next := AdvanceEpochs(book, elections, uids, now)
			for cid, st := range next {
				old, had := book[cid]
				if st.Epoch < old.Epoch {
					t.Fatalf("step %d: epoch of %s went back: %d → %d", step, cid, old.Epoch, st.Epoch)
				}
				changed := had && (old.Primary != st.Primary || old.PrimaryUID != st.PrimaryUID)
				if changed && st.Epoch <= old.Epoch {
					t.Fatalf("step %d: Primary of %s changed (%v → %v) without a higher epoch", step, cid, old, st)
				}
				if had && !changed && st.Epoch != old.Epoch {
					t.Fatalf("step %d: epoch of %s moved without a Primary change: %v → %v", step, cid, old, st)
				}
			}
			book = next
		}
	})
}

func TestMergeEpochs(t *testing.T) {
	book := EpochBook{"a": {10, "n1:1", 1}, "b": {20, "m1:1", 2}}
	seen := EpochBook{"a": {12, "n2:1", 3}, "b": {19, "m9:1", 9}, "c": {5, "k:1", 4}}
	got := MergeEpochs(book, seen)
	want := EpochBook{"a": {12, "n2:1", 3}, "b": {20, "m1:1", 2}, "c": {5, "k:1", 4}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("MergeEpochs = %v, want %v", got, want)
	}
	if book["a"].Epoch != 10 {
		t.Fatal("MergeEpochs modified its input")
	}
}
