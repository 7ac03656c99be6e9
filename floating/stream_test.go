package floating

import (
	"testing"
	"time"
)

func TestStreamKeepsTheLatestPerNode(t *testing.T) {
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	hb := func(node string, seq uint64, obs int, claims bool) Heartbeat {
		return Heartbeat{ClusterID: "c1", Node: node, Seq: seq, EmittedAt: at(obs), ObservedAt: at(obs), Claims: claims}
	}
	s := NewStream("c1")
	for _, tc := range []struct {
		name    string
		h       Heartbeat
		kept    bool
		max     int
		lastSeq uint64
	}{
		{"first", hb("a", 5, 10, true), true, 10, 5},
		{"higher seq", hb("a", 6, 11, false), true, 11, 6},
		{"lower seq observed later: ignored, max moves", hb("a", 4, 12, true), false, 12, 6},
		{"same seq observed later", hb("a", 6, 13, true), true, 13, 6},
		{"same seq observed earlier: ignored", hb("a", 6, 9, false), false, 13, 6},
		{"another ClusterId: ignored, max stays", Heartbeat{ClusterID: "c2", Node: "a", Seq: 99, ObservedAt: at(50)}, false, 13, 6},
	} {
		if got := s.Observe(tc.h); got != tc.kept {
			t.Fatalf("%s: Observe = %t, want %t", tc.name, got, tc.kept)
		}
		if !s.Max().Equal(at(tc.max)) {
			t.Fatalf("%s: Max = %s, want %s", tc.name, s.Max(), at(tc.max))
		}
		if last, _ := s.Last("a"); last.Seq != tc.lastSeq {
			t.Fatalf("%s: Last(a).Seq = %d, want %d", tc.name, last.Seq, tc.lastSeq)
		}
	}
	if last, _ := s.Last("a"); !last.Claims || !last.ObservedAt.Equal(at(13)) {
		t.Fatalf("Last(a) = %+v, want the seq 6 heartbeat observed at +13s claiming", last)
	}
	if _, ok := s.Last("b"); ok {
		t.Fatal("Last(b) found a heartbeat b never sent")
	}
}

// The stream's time is the largest ObservedAt, never a member's clock: a
// member whose clock runs ahead does not move it, and its skew shows.
func TestStreamMaxIgnoresSkewAndSkewsShowIt(t *testing.T) {
	s := NewStream("c1")
	s.Observe(Heartbeat{ClusterID: "c1", Node: "a", Seq: 1, EmittedAt: t0.Add(10 * time.Second), ObservedAt: t0})
	s.Observe(Heartbeat{ClusterID: "c1", Node: "b", Seq: 1, EmittedAt: t0.Add(-9 * time.Second), ObservedAt: t0.Add(time.Second)})
	if !s.Max().Equal(t0.Add(time.Second)) {
		t.Fatalf("Max = %s, want %s (b's ObservedAt)", s.Max(), t0.Add(time.Second))
	}
	sk := s.Skews()
	if len(sk) != 2 || sk["a"] != 10*time.Second || sk["b"] != -10*time.Second {
		t.Fatalf("Skews = %v, want a:+10s b:-10s", sk)
	}
}

func TestStreamFill(t *testing.T) {
	s := NewStream("c1")
	s.Observe(Heartbeat{ClusterID: "c1", Node: "a", Seq: 1, EmittedAt: t0.Add(time.Hour), ObservedAt: t0, Claims: true})
	ms := []Member{{Node: "a"}, {Node: "b", Heartbeat: t0.Add(time.Minute), Claims: true}}
	s.Fill(ms)
	if !ms[0].Heartbeat.Equal(t0) || !ms[0].Claims {
		t.Fatalf("a = %+v, want its heartbeat at the stream's ObservedAt, claiming", ms[0])
	}
	if !ms[1].Heartbeat.IsZero() || ms[1].Claims {
		t.Fatalf("b = %+v, want no heartbeat and no claim (none on the stream)", ms[1])
	}
}
