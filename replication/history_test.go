package replication

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/internal/poll"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestHistoryCodecRoundTrips(t *testing.T) {
	for _, m := range []any{
		&HistoryPull{Tag: "press1/FastCounter", After: math.MinInt64, Before: math.MaxInt64, Limit: MaxHistorySamples},
		&HistoryPull{Tag: "d/t", After: -5, Before: 7, Limit: 1},
		&HistoryBatch{},
		&HistoryBatch{Samples: []Sample{{At: -1, Value: math.Inf(-1), Status: 0x80320000}, {At: 3, Value: 2.5}}, More: true},
	} {
		b, err := Encode(m)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", m, err)
		}
		got := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		if err := Decode(b, got); err != nil {
			t.Fatalf("Decode(%T): %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip: %+v, want %+v", got, m)
		}
	}
}

func TestHistoryCodecRefusesMalformed(t *testing.T) {
	batch, _ := Encode(&HistoryBatch{Samples: []Sample{{At: 1}, {At: 2}}})
	for _, tc := range []struct {
		name string
		m    any
	}{
		{"empty tag", &HistoryPull{After: 1, Before: 2, Limit: 1}},
		{"long tag", &HistoryPull{Tag: strings.Repeat("x", maxTag+1), After: 1, Before: 2, Limit: 1}},
		{"tag with a space", &HistoryPull{Tag: "d/a b", After: 1, Before: 2, Limit: 1}},
		{"empty window", &HistoryPull{Tag: "d/t", After: 2, Before: 2, Limit: 1}},
		{"limit zero", &HistoryPull{Tag: "d/t", After: 1, Before: 2}},
		{"limit over", &HistoryPull{Tag: "d/t", After: 1, Before: 2, Limit: MaxHistorySamples + 1}},
		{"samples out of order", &HistoryBatch{Samples: []Sample{{At: 2}, {At: 1}}}},
		{"one time twice", &HistoryBatch{Samples: []Sample{{At: 2}, {At: 2}}}},
		{"too many samples", &HistoryBatch{Samples: make([]Sample, MaxHistorySamples+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Encode(tc.m); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Encode: %v, want ErrMalformed", err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"truncated", batch[:len(batch)-1]},
		{"trailing byte", append(append([]byte(nil), batch...), 0)},
		{"count larger than the bytes", append([]byte{1, msgHistoryBatch, 0, 3}, batch[4:]...)},
		{"count over the limit", []byte{1, msgHistoryBatch, 0, 0x91, 0x4e}},
		{"out of order", func() []byte {
			b := append([]byte(nil), batch...)
			b[4+7], b[4+20+7] = 2, 1
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var into HistoryBatch
			if err := Decode(tc.b, &into); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode: %v, want ErrMalformed", err)
			}
			if into.Samples != nil || into.More {
				t.Fatal("a refused message changed the target")
			}
		})
	}
}

// TestLargestHistoryPullFitsTheRequestLimit: a history request is never
// refused by the served port's request bound (maxRequestBytes).
func TestLargestHistoryPullFitsTheRequestLimit(t *testing.T) {
	b, err := Encode(&HistoryPull{Tag: strings.Repeat("t", maxTag), After: math.MinInt64, Before: math.MaxInt64, Limit: MaxHistorySamples})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > maxRequestBytes {
		t.Fatalf("largest HistoryPull %d bytes, limit %d", len(b), maxRequestBytes)
	}
}

// source is a HistorySource of one tag's samples.
type source struct {
	tag string
	xs  []Sample
}

func (s source) HistorySamples(_ context.Context, tag string, after, before int64, limit int) ([]Sample, bool, error) {
	var out []Sample
	for _, x := range s.xs {
		if tag != s.tag || x.At <= after || x.At >= before {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, x)
	}
	return out, false, nil
}

// TestHistoryPeerAsksThePeersHistory: a node asks its peer's history with
// the pair's key, a slice at a time; a peer without history answers
// Unimplemented; a node with another key is refused.
func TestHistoryPeerAsksThePeersHistory(t *testing.T) {
	xs := make([]Sample, 25)
	for i := range xs {
		xs[i] = Sample{At: int64(i) * 10, Value: float64(i)}
	}
	a, b := pair(t, testKey, testKey)
	ctx := ctxT(t)
	// b serves no history yet: Unimplemented (once a's connection has
	// found b: a dialled it before b listened).
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if _, _, err := a.r.HistoryPeers()[0].Samples(ctx, "d/t", -1, 1000, 10); status.Code(err) != codes.Unimplemented {
			return fmt.Errorf("a peer without history: %v", err)
		}
		return nil
	})
	b.r.Stop()
	b.startWith(t, a.listen, testKey, func(o *Options) { o.History = source{"d/t", xs} })
	// a's connection finds the restarted b again.
	poll.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, _, err := a.r.HistoryPeers()[0].Samples(ctx, "d/t", -1, 1000, 10)
		return err
	})
	var got []Sample
	after := int64(-1)
	for calls := 1; ; calls++ {
		page, more, err := a.r.HistoryPeers()[0].Samples(ctx, "d/t", after, 1000, 10)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if !more {
			if calls != 3 {
				t.Fatalf("%d calls for 25 samples by 10", calls)
			}
			break
		}
		after = page[len(page)-1].At
	}
	if !reflect.DeepEqual(got, xs) {
		t.Fatalf("got %v", got)
	}
	if err := a.r.SetAPIKey("another-key-of-16-chars"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.r.HistoryPeers()[0].Samples(ctx, "d/t", -1, 1000, 10); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("with another key: %v", err)
	}
}
