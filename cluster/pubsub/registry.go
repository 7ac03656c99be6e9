package pubsub

import (
	"maps"
	"slices"

	"github.com/otopcua/otopcua/cluster/membership"
)

// Bucket is one node's entry in the topic registry: the topics that have
// at least one local subscriber on Owner. Only Owner changes its bucket,
// and it increases Version on every change, so of two copies of a bucket
// the higher Version is the newer.
type Bucket struct {
	Owner   membership.UniqueAddress
	Version uint64
	// Topics is sorted and free of duplicates.
	Topics []string
}

// Has reports whether the bucket lists topic.
func (b Bucket) Has(topic string) bool {
	_, ok := slices.BinarySearch(b.Topics, topic)
	return ok
}

// Registry is one mediator's view of the topic registry: a bucket per
// node, keyed by incarnation, so a restarted process at the same address
// starts a new bucket and never inherits its predecessor's topics.
//
// A Registry is a value: every method returns a new Registry and never
// modifies the receiver or a slice it shares.
type Registry struct {
	buckets map[membership.UniqueAddress]Bucket
}

// NewRegistry returns a registry holding bs (the highest version of each
// owner wins).
func NewRegistry(bs ...Bucket) Registry {
	r, _ := Registry{}.Merge(bs, func(membership.UniqueAddress) bool { return true })
	return r
}

// Len is the number of buckets.
func (r Registry) Len() int { return len(r.buckets) }

// Bucket returns owner's bucket.
func (r Registry) Bucket(owner membership.UniqueAddress) (Bucket, bool) {
	b, ok := r.buckets[owner]
	return b, ok
}

// Buckets returns every bucket, sorted by owner.
func (r Registry) Buckets() []Bucket {
	out := slices.Collect(maps.Values(r.buckets))
	slices.SortFunc(out, func(a, b Bucket) int { return a.Owner.Compare(b.Owner) })
	return out
}

// Versions is the registry's digest: the version held of each bucket.
func (r Registry) Versions() map[membership.UniqueAddress]uint64 {
	out := make(map[membership.UniqueAddress]uint64, len(r.buckets))
	for u, b := range r.buckets {
		out[u] = b.Version
	}
	return out
}

// Merge takes every bucket of bs whose owner accept admits and whose
// version is higher than the one held (a missing bucket is version 0).
// changed reports whether anything was taken. Merge is commutative,
// associative and idempotent per owner: the result holds, for each
// admitted owner, the highest version seen.
func (r Registry) Merge(bs []Bucket, accept func(membership.UniqueAddress) bool) (Registry, bool) {
	var out map[membership.UniqueAddress]Bucket
	for _, b := range bs {
		if b.Version == 0 || !accept(b.Owner) {
			continue
		}
		cur := r.buckets
		if out != nil {
			cur = out
		}
		if old, ok := cur[b.Owner]; ok && old.Version >= b.Version {
			continue
		}
		if out == nil {
			out = maps.Clone(r.buckets)
			if out == nil {
				out = map[membership.UniqueAddress]Bucket{}
			}
		}
		b.Topics = normalize(b.Topics)
		out[b.Owner] = b
	}
	if out == nil {
		return r, false
	}
	return Registry{buckets: out}, true
}

// Delta returns the buckets held newer than in the digest theirs, sorted
// by owner: what the holder of theirs lacks.
func (r Registry) Delta(theirs map[membership.UniqueAddress]uint64) []Bucket {
	var out []Bucket
	for u, b := range r.buckets {
		if b.Version > theirs[u] {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b Bucket) int { return a.Owner.Compare(b.Owner) })
	return out
}

// Behind reports whether the digest theirs holds a newer version than this
// registry of a bucket whose owner accept admits: the holder of theirs
// has something to send.
func (r Registry) Behind(theirs map[membership.UniqueAddress]uint64, accept func(membership.UniqueAddress) bool) bool {
	for u, v := range theirs {
		if v > r.buckets[u].Version && accept(u) {
			return true
		}
	}
	return false
}

// Prune drops every bucket whose owner keep rejects (a node removed from
// the membership). changed reports whether anything was dropped.
func (r Registry) Prune(keep func(membership.UniqueAddress) bool) (Registry, bool) {
	var out map[membership.UniqueAddress]Bucket
	for u := range r.buckets {
		if keep(u) {
			continue
		}
		if out == nil {
			out = maps.Clone(r.buckets)
		}
		delete(out, u)
	}
	if out == nil {
		return r, false
	}
	return Registry{buckets: out}, true
}

// WithTopics sets owner's topics, increasing its version when they change.
// Only the owner calls it, for its own bucket.
func (r Registry) WithTopics(owner membership.UniqueAddress, topics []string) (Registry, bool) {
	topics = normalize(topics)
	old := r.buckets[owner]
	if slices.Equal(old.Topics, topics) && (old.Version > 0 || len(topics) == 0) {
		return r, false
	}
	out := maps.Clone(r.buckets)
	if out == nil {
		out = map[membership.UniqueAddress]Bucket{}
	}
	out[owner] = Bucket{Owner: owner, Version: old.Version + 1, Topics: topics}
	return Registry{buckets: out}, true
}

// Nodes lists the owners whose bucket has topic, sorted.
func (r Registry) Nodes(topic string) []membership.UniqueAddress {
	var out []membership.UniqueAddress
	for u, b := range r.buckets {
		if b.Has(topic) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, membership.UniqueAddress.Compare)
	return out
}

func normalize(topics []string) []string {
	out := slices.Clone(topics)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// Receives reports whether a message may be sent to node u in view st:
// u is a member that is WeaklyUp, Up, Leaving or Exiting (a Joining member
// is not yet part of the cluster, a Down one is being removed) and st's
// node does not hold it unreachable (a send to a dead peer would start the
// transport's reconnect schedule; pub/sub does not buffer, so the message
// is simply not sent).
func Receives(st membership.State, u membership.UniqueAddress) bool {
	m, ok := st.Gossip.Member(u)
	if !ok {
		return false
	}
	switch m.Status {
	case membership.WeaklyUp, membership.Up, membership.Leaving, membership.Exiting:
	default:
		return false
	}
	return u == st.Self || st.Gossip.Reachability.IsReachableFrom(st.Self, u)
}

// Targets lists the other nodes a Publish on topic goes to: the owners
// of a bucket with topic that Receives admits, sorted. Local subscribers
// are served apart, from the node's own subscriber table.
func Targets(st membership.State, r Registry, topic string) []membership.UniqueAddress {
	var out []membership.UniqueAddress
	for _, u := range r.Nodes(topic) {
		if u != st.Self && Receives(st, u) {
			out = append(out, u)
		}
	}
	return out
}

// Peers lists the other nodes the registry is gossiped to: every member
// Receives admits, sorted.
func Peers(st membership.State) []membership.UniqueAddress {
	var out []membership.UniqueAddress
	for _, m := range st.Gossip.Members {
		if m.Address != st.Self && Receives(st, m.Address) {
			out = append(out, m.Address)
		}
	}
	return out
}
