package benchsrv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// TestLayout checks, through a real client, that every implementation
// serves the documented nodes and that UpdateAll changes them with a fresh
// SourceTimestamp.
func TestLayout(t *testing.T) {
	for _, impl := range Impls {
		t.Run(impl, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			srv, err := New(ctx, impl, Config{Items: 10, Addr: "127.0.0.1:0"})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			before := time.Now()
			srv.UpdateAll(5)

			ch, err := uaclient.Dial(ctx, srv.URL(), uaclient.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer ch.Close()
			sess, err := uaclient.NewSession(ctx, ch, "test", time.Minute, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ids := []uint32{FirstID, FirstID + 1, FirstID + 9, RoundsID}
			want := []any{valueOf(0, 5), valueOf(1, 5), valueOf(9, 5), int64(5)}
			var nodes []*ua.ReadValueID
			for _, i := range ids {
				nodes = append(nodes, &ua.ReadValueID{NodeID: ua.NewNumericNodeID(Namespace, i), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
			}
			resp, err := sess.Call(ctx, &ua.ReadRequest{NodesToRead: nodes, TimestampsToReturn: ua.TimestampsToReturnBoth}, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			res := resp.(*ua.ReadResponse).Results
			if len(res) != len(ids) {
				t.Fatalf("%d results for %d nodes", len(res), len(ids))
			}
			for i, dv := range res {
				if dv.Status != ua.StatusOK || dv.Value == nil || dv.Value.Value() != want[i] {
					t.Errorf("ns=%d;i=%d: status %v value %v, want %v", Namespace, ids[i], dv.Status, dv.Value, want[i])
				}
				if dv.SourceTimestamp.Before(before.Add(-time.Millisecond)) || dv.SourceTimestamp.After(time.Now()) {
					t.Errorf("ns=%d;i=%d: SourceTimestamp %v not set by UpdateAll (at %v)", Namespace, ids[i], dv.SourceTimestamp, before)
				}
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(context.Background(), "nope", Config{Items: 1, Addr: "127.0.0.1:0"}); !errors.Is(err, ErrUnknownImpl) {
		t.Errorf("unknown impl: err = %v", err)
	}
	if _, err := New(context.Background(), "gopcua", Config{Items: 0, Addr: "127.0.0.1:0"}); err == nil {
		t.Error("zero items: want an error")
	}
}

func TestValueOfChangesEveryRound(t *testing.T) {
	for k := range 4 {
		if valueOf(k, 1) == valueOf(k, 2) {
			t.Errorf("variable %d keeps its value between rounds", k)
		}
	}
	if _, ok := valueOf(0, 1).(int64); !ok {
		t.Error("even variables must be Int64")
	}
	if _, ok := valueOf(1, 1).(float64); !ok {
		t.Error("odd variables must be Double")
	}
}
