package hlc

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func genNode() *rapid.Generator[string] {
	return rapid.StringMatching(`[a-c][!-~]{0,6}`)
}

func genStamp() *rapid.Generator[Stamp] {
	return rapid.Custom(func(t *rapid.T) Stamp {
		return Stamp{
			WallMs:  rapid.Int64Range(0, 5).Draw(t, "wall") + rapid.SampledFrom([]int64{0, 1_700_000_000_000, maxWallMs - 5}).Draw(t, "base"),
			Counter: rapid.SampledFrom([]uint32{0, 1, 2, math.MaxUint32}).Draw(t, "counter"),
			Node:    genNode().Draw(t, "node"),
		}
	})
}

// register is a last-writer-wins register: the value written at the
// latest stamp.
type register struct {
	at    Stamp
	value string
}

func merge(a, b register) register {
	if Compare(a.at, b.at) >= 0 {
		return a
	}
	return b
}

func genRegister() *rapid.Generator[register] {
	return rapid.Custom(func(t *rapid.T) register {
		s := genStamp().Draw(t, "stamp")
		// One stamp names one write: the value is a function of the stamp.
		return register{at: s, value: "v" + s.String()}
	})
}

func TestMergeIsCommutativeAssociativeIdempotent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b, c := genRegister().Draw(t, "a"), genRegister().Draw(t, "b"), genRegister().Draw(t, "c")
		if merge(a, b) != merge(b, a) {
			t.Fatalf("not commutative: %v, %v", a, b)
		}
		if merge(merge(a, b), c) != merge(a, merge(b, c)) {
			t.Fatalf("not associative: %v, %v, %v", a, b, c)
		}
		if merge(a, a) != a || merge(merge(a, b), b) != merge(a, b) {
			t.Fatalf("not idempotent: %v, %v", a, b)
		}
		if Max(a.at, b.at) != Max(b.at, a.at) {
			t.Fatalf("Max not commutative")
		}
	})
}

func TestCompareIsATotalOrderMatchingTheText(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genStamp().Draw(t, "a"), genStamp().Draw(t, "b")
		c := Compare(a, b)
		if c != -Compare(b, a) {
			t.Fatalf("Compare not antisymmetric: %v %v", a, b)
		}
		if (c == 0) != (a == b) {
			t.Fatalf("Compare 0 for different stamps %v %v", a, b)
		}
		if got := strings.Compare(a.String(), b.String()); got != c {
			t.Fatalf("text order %d, Compare %d: %q %q", got, c, a, b)
		}
	})
}

func TestEncodingsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := genStamp().Draw(t, "s")
		p, err := Parse(s.String())
		if err != nil || p != s {
			t.Fatalf("Parse(%q) = %v, %v", s.String(), p, err)
		}
		b, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var u Stamp
		if err := u.UnmarshalBinary(b); err != nil || u != s {
			t.Fatalf("UnmarshalBinary = %v, %v, want %v", u, err, s)
		}
		if err := u.UnmarshalBinary(b[:len(b)-1]); err == nil {
			t.Fatalf("a truncated stamp decoded")
		}
	})
}

func TestParseRefusesMalformed(t *testing.T) {
	for _, text := range []string{
		"", "1.2.a", "000000000000001.0000000000.", "00000000000000a.0000000000.n",
		"000000000000001.9999999999.n", "000000000000001-0000000000.n", "000000000000001.0000000000.a b",
		"000000000000001.0000000000." + strings.Repeat("n", MaxNodeLen+1),
	} {
		if _, err := Parse(text); !errors.Is(err, ErrMalformed) {
			t.Errorf("Parse(%q) err = %v, want ErrMalformed", text, err)
		}
	}
	var s Stamp
	if err := s.UnmarshalBinary(make([]byte, 13)); err != nil {
		t.Errorf("the zero stamp (a start cursor) must decode: %v", err)
	}
	bad := append(make([]byte, 12), 1, ' ')
	if err := s.UnmarshalBinary(bad); !errors.Is(err, ErrMalformed) {
		t.Errorf("node id with a space decoded: %v", err)
	}
}

// TestNowIsMonotonicWhateverTheWallClockDoes steps a fake wall clock back
// and forth and merges accepted remote stamps between calls to Now.
func TestNowIsMonotonicWhateverTheWallClockDoes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		wall := int64(1_700_000_000_000)
		c := New("me", func() int64 { return wall }, time.Minute)
		var latest Stamp
		for i, n := 0, rapid.IntRange(1, 200).Draw(t, "steps"); i < n; i++ {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // the wall clock steps, possibly back by up to an hour
				wall += rapid.Int64Range(-3_600_000, 2_000).Draw(t, "step")
			case 1:
				r := Stamp{WallMs: wall + rapid.Int64Range(-120_000, 60_000).Draw(t, "ahead"),
					Counter: rapid.Uint32Range(0, 3).Draw(t, "rc"), Node: genNode().Draw(t, "rnode")}
				if err := c.Update(r); err != nil {
					t.Fatalf("Update(%v) within the skew refused: %v", r, err)
				}
				latest = Max(latest, r)
			default:
				s := c.Now()
				if !latest.Less(s) || s.Node != "me" {
					t.Fatalf("Now = %v, not after %v", s, latest)
				}
				latest = s
			}
		}
	})
}

func TestUpdateRefusesAStampTooFarAhead(t *testing.T) {
	wall := int64(1_700_000_000_000)
	c := New("me", func() int64 { return wall }, time.Minute)
	before := c.Now()
	err := c.Update(Stamp{WallMs: wall + 60_001, Node: "peer"})
	if !errors.Is(err, ErrSkew) {
		t.Fatalf("Update 60.001 s ahead: err = %v, want ErrSkew", err)
	}
	if c.Last() != before {
		t.Fatalf("a refused stamp moved the clock to %v", c.Last())
	}
	if err := c.Update(Stamp{WallMs: wall + 60_000, Node: "peer"}); err != nil {
		t.Fatalf("Update exactly 60 s ahead: %v", err)
	}
	if got := c.Now(); got.WallMs != wall+60_000 || got.Counter == 0 {
		t.Fatalf("Now after an accepted future stamp = %v", got)
	}
	if err := c.Update(Stamp{WallMs: -1, Node: "peer"}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("negative wall time: err = %v", err)
	}
}

func TestCounterOverflowMovesTheWallTimeOn(t *testing.T) {
	c := New("me", func() int64 { return 10 }, 0)
	if err := c.Update(Stamp{WallMs: 10, Counter: math.MaxUint32, Node: "zz"}); err != nil {
		t.Fatal(err)
	}
	// me sorts before zz, so the merged stamp must move past the full
	// counter: the wall time goes on by 1 ms.
	if s := c.Last(); s != (Stamp{WallMs: 11, Node: "me"}) {
		t.Fatalf("Last after a full counter = %v", s)
	}
	if s := c.Now(); s != (Stamp{WallMs: 11, Counter: 1, Node: "me"}) {
		t.Fatalf("Now after a full counter = %v", s)
	}
}

func TestNewPanicsOnABadNodeID(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("New with an empty node id did not panic")
		}
	}()
	New("", func() int64 { return 0 }, 0)
}
