package pubsub

import (
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"

	m "github.com/otopcua/otopcua/cluster/membership"
)

func ua(host string, uid uint64) m.UniqueAddress {
	return m.UniqueAddress{Host: host, Port: 2552, UID: uid}
}

var (
	nodeA = ua("a", 1)
	nodeB = ua("b", 2)
	nodeC = ua("c", 3)
)

func all(m.UniqueAddress) bool { return true }

func TestMergeTable(t *testing.T) {
	base := NewRegistry(Bucket{Owner: nodeB, Version: 3, Topics: []string{"alerts"}})
	cases := []struct {
		name    string
		in      []Bucket
		accept  func(m.UniqueAddress) bool
		changed bool
		want    map[m.UniqueAddress]uint64
	}{
		{"newer version wins", []Bucket{{Owner: nodeB, Version: 4}}, all, true, map[m.UniqueAddress]uint64{nodeB: 4}},
		{"older version ignored", []Bucket{{Owner: nodeB, Version: 2, Topics: []string{"x"}}}, all, false, map[m.UniqueAddress]uint64{nodeB: 3}},
		{"same version ignored", []Bucket{{Owner: nodeB, Version: 3, Topics: []string{"x"}}}, all, false, map[m.UniqueAddress]uint64{nodeB: 3}},
		{"new owner added", []Bucket{{Owner: nodeC, Version: 1, Topics: []string{"x"}}}, all, true, map[m.UniqueAddress]uint64{nodeB: 3, nodeC: 1}},
		{"version 0 is no bucket", []Bucket{{Owner: nodeC, Version: 0, Topics: []string{"x"}}}, all, false, map[m.UniqueAddress]uint64{nodeB: 3}},
		{"owner not admitted", []Bucket{{Owner: nodeC, Version: 9}}, func(u m.UniqueAddress) bool { return u != nodeC }, false, map[m.UniqueAddress]uint64{nodeB: 3}},
		{"highest of several copies", []Bucket{{Owner: nodeC, Version: 2}, {Owner: nodeC, Version: 5}, {Owner: nodeC, Version: 4}}, all, true, map[m.UniqueAddress]uint64{nodeB: 3, nodeC: 5}},
	}
	for _, tc := range cases {
		got, changed := base.Merge(tc.in, tc.accept)
		if changed != tc.changed || !maps.Equal(got.Versions(), tc.want) {
			t.Errorf("%s: versions %v changed %v, want %v %v", tc.name, got.Versions(), changed, tc.want, tc.changed)
		}
	}
	if v := base.Versions(); !maps.Equal(v, map[m.UniqueAddress]uint64{nodeB: 3}) {
		t.Errorf("Merge modified its receiver: %v", v)
	}
}

func TestWithTopicsVersions(t *testing.T) {
	r := Registry{}
	if _, changed := r.WithTopics(nodeA, nil); changed {
		t.Fatal("no topics and no bucket is no change")
	}
	r, _ = r.WithTopics(nodeA, []string{"b", "a", "b"})
	if b, _ := r.Bucket(nodeA); b.Version != 1 || !slices.Equal(b.Topics, []string{"a", "b"}) {
		t.Fatalf("bucket %+v", b)
	}
	if _, changed := r.WithTopics(nodeA, []string{"a", "b"}); changed {
		t.Fatal("same topics changed the version")
	}
	r, _ = r.WithTopics(nodeA, nil)
	if b, ok := r.Bucket(nodeA); !ok || b.Version != 2 || len(b.Topics) != 0 {
		t.Fatalf("emptied bucket must stay, at a higher version, so the change spreads: %+v %v", b, ok)
	}
}

func TestDeltaBehindPrune(t *testing.T) {
	r := NewRegistry(Bucket{Owner: nodeA, Version: 2, Topics: []string{"x"}}, Bucket{Owner: nodeB, Version: 5})
	theirs := map[m.UniqueAddress]uint64{nodeA: 2, nodeB: 1, nodeC: 7}
	if d := r.Delta(theirs); len(d) != 1 || d[0].Owner != nodeB {
		t.Fatalf("delta %+v, want b's bucket only", d)
	}
	if !r.Behind(theirs, all) {
		t.Fatal("they hold c at 7, we hold nothing: behind")
	}
	if r.Behind(theirs, func(u m.UniqueAddress) bool { return u != nodeC }) {
		t.Fatal("c not admitted: nothing to fetch")
	}
	p, changed := r.Prune(func(u m.UniqueAddress) bool { return u != nodeA })
	if !changed || p.Len() != 1 || len(p.Nodes("x")) != 0 {
		t.Fatalf("prune: %v %v", p.Buckets(), changed)
	}
	if r.Len() != 2 {
		t.Fatal("Prune modified its receiver")
	}
}

// view builds a membership view seen from self.
func view(self m.UniqueAddress, members ...m.Member) m.State {
	return m.State{Gossip: m.NewGossip(members...), Self: self}
}

func member(u m.UniqueAddress, s m.Status) m.Member {
	mb := m.NewMember(u, nil, "")
	if s == m.Joining {
		return mb
	}
	mb = mb.WithUp(int(u.UID))
	switch s {
	case m.Leaving, m.Exiting:
		mb = mb.WithStatus(m.Leaving).WithStatus(s)
	case m.Down:
		mb = mb.WithStatus(m.Down)
	}
	return mb
}

func TestTargets(t *testing.T) {
	d, e := ua("d", 4), ua("e", 5)
	reg := NewRegistry(
		Bucket{Owner: nodeA, Version: 1, Topics: []string{"t"}},
		Bucket{Owner: nodeB, Version: 1, Topics: []string{"t"}},
		Bucket{Owner: nodeC, Version: 1, Topics: []string{"t"}},
		Bucket{Owner: d, Version: 1, Topics: []string{"t"}},
		Bucket{Owner: e, Version: 1, Topics: []string{"other"}},
		Bucket{Owner: ua("gone", 9), Version: 1, Topics: []string{"t"}},
	)
	st := view(nodeA, member(nodeA, m.Up), member(nodeB, m.Up), member(nodeC, m.Joining), member(d, m.Exiting), member(e, m.Up))
	if got := Targets(st, reg, "t"); !slices.Equal(got, []m.UniqueAddress{nodeB, d}) {
		t.Fatalf("targets %v: want b (Up) and d (Exiting); not self, not Joining c, not a non-member", got)
	}
	st.Gossip = st.Gossip.WithReachability(st.Gossip.Reachability.Unreachable(nodeA, nodeB))
	if got := Targets(st, reg, "t"); !slices.Equal(got, []m.UniqueAddress{d}) {
		t.Fatalf("targets %v: b is unreachable from a", got)
	}
	// another observer's verdict does not stop a's sends
	st2 := view(nodeA, member(nodeA, m.Up), member(nodeB, m.Up), member(e, m.Up))
	st2.Gossip = st2.Gossip.WithReachability(st2.Gossip.Reachability.Unreachable(e, nodeB))
	if got := Targets(st2, reg, "t"); !slices.Equal(got, []m.UniqueAddress{nodeB}) {
		t.Fatalf("targets %v", got)
	}
	down := view(nodeA, member(nodeA, m.Up), member(nodeB, m.Down))
	if got := Targets(down, reg, "t"); len(got) != 0 {
		t.Fatalf("a Down member is not sent to: %v", got)
	}
}

// genBuckets draws buckets over a few owners and versions.
func genBuckets(t *rapid.T, label string) []Bucket {
	owners := []m.UniqueAddress{nodeA, nodeB, nodeC, ua("a", 7)}
	topics := []string{"alerts", "redundancy-state", "x"}
	return rapid.SliceOfN(rapid.Custom(func(t *rapid.T) Bucket {
		// the content is a function of owner and version, as only the
		// owner writes its bucket
		o := rapid.IntRange(0, len(owners)-1).Draw(t, "owner")
		v := rapid.Uint64Range(0, 6).Draw(t, "version")
		var ts []string
		for i, tp := range topics {
			if (uint64(o)+v+uint64(i))%2 == 0 {
				ts = append(ts, tp)
			}
		}
		return Bucket{Owner: owners[o], Version: v, Topics: ts}
	}), 0, 12).Draw(t, label)
}

// model is the brute-force registry: the highest version per owner.
func model(bss ...[]Bucket) map[m.UniqueAddress]uint64 {
	out := map[m.UniqueAddress]uint64{}
	for _, bs := range bss {
		for _, b := range bs {
			if b.Version > out[b.Owner] {
				out[b.Owner] = b.Version
			}
		}
	}
	return out
}

func equal(a, b Registry) bool {
	return slices.EqualFunc(a.Buckets(), b.Buckets(), func(x, y Bucket) bool {
		return x.Owner == y.Owner && x.Version == y.Version && slices.Equal(x.Topics, y.Topics)
	})
}

// TestMergeProperties: merging is order-independent, idempotent and keeps
// exactly the highest version per owner.
func TestMergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		x, y, z := genBuckets(t, "x"), genBuckets(t, "y"), genBuckets(t, "z")
		merge := func(r Registry, bs []Bucket) Registry { out, _ := r.Merge(bs, all); return out }
		xy := merge(merge(NewRegistry(), x), y)
		yx := merge(merge(NewRegistry(), y), x)
		if !equal(xy, yx) {
			t.Fatalf("not commutative:\n%v\n%v", xy.Buckets(), yx.Buckets())
		}
		left := merge(merge(merge(NewRegistry(), x), y), z)
		right := merge(NewRegistry(), append(append(slices.Clone(x), y...), z...))
		if !equal(left, right) {
			t.Fatalf("not associative:\n%v\n%v", left.Buckets(), right.Buckets())
		}
		if again, changed := left.Merge(x, all); changed || !equal(again, left) {
			t.Fatal("merging what is already held changed the registry")
		}
		if want := model(x, y, z); !maps.Equal(left.Versions(), want) {
			t.Fatalf("versions %v, want %v", left.Versions(), want)
		}
	})
}

// TestGossipExchangeConverges: one status → delta (+ reply status →
// delta) exchange, as the mediators run it, leaves both sides equal.
func TestGossipExchangeConverges(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, _ := NewRegistry().Merge(genBuckets(t, "p"), all)
		q, _ := NewRegistry().Merge(genBuckets(t, "q"), all)
		// p sends its status to q; q answers with a delta and, being
		// behind, its own status; p answers that with a delta.
		status := p.Versions()
		toP := q.Delta(status)
		behind := q.Behind(status, all)
		p2, _ := p.Merge(toP, all)
		q2 := q
		if behind {
			q2, _ = q.Merge(p.Delta(q.Versions()), all)
		}
		if !equal(p2, q2) {
			t.Fatalf("not converged:\n%v\n%v", p2.Buckets(), q2.Buckets())
		}
	})
}

// TestPruneThenStaleMergeStaysPruned: once a removed owner is no longer
// admitted, no delta brings its bucket back.
func TestPruneThenStaleMergeStaysPruned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r, _ := NewRegistry().Merge(genBuckets(t, "r"), all)
		gone := nodeB
		admit := func(u m.UniqueAddress) bool { return u != gone }
		r, _ = r.Prune(admit)
		r, _ = r.Merge(genBuckets(t, "stale"), admit)
		if _, ok := r.Bucket(gone); ok {
			t.Fatal("a pruned owner came back")
		}
	})
}
