package chunksec

import "testing"

// TestSeqFollows is Part 6 §6.7.2.4's rule.
func TestSeqFollows(t *testing.T) {
	const top = ^uint32(0)
	for _, tc := range []struct {
		prev, next uint32
		want       bool
	}{
		{1, 2, true},
		{1, 1, false},
		{5, 4, false},
		{5, 7, false},
		{top - 1024, top - 1023, true},
		{top - 1024, 3, false}, // not yet allowed to wrap
		{top - 1023, 3, true},
		{top - 10, 1023, true},
		{top - 10, 1024, false},
		{top, 0, true},
		{top, 1, true},
	} {
		if got := SeqFollows(tc.prev, tc.next); got != tc.want {
			t.Errorf("SeqFollows(%d, %d) = %v, want %v", tc.prev, tc.next, got, tc.want)
		}
	}
}
