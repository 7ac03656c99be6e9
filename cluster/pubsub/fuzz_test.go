package pubsub

import (
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/wire"
)

// FuzzDecode: any bytes, read as any of the mediator's wire messages,
// decode without panicking; what decodes has valid addresses with uids,
// valid topics and normalised bucket topics.
func FuzzDecode(f *testing.F) {
	a, b := nodeA, nodeB
	p, _ := anypb.New(wrapperspb.String("x"))
	for _, msg := range []proto.Message{
		statusToWire(a, b, map[membership.UniqueAddress]uint64{nodeC: 3}, false),
		deltaToWire(a, b, []Bucket{{Owner: nodeC, Version: 3, Topics: []string{"alerts"}}}),
		messageToWire(a, b, "alerts", p, true),
	} {
		raw, err := proto.Marshal(msg)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, msg := range []proto.Message{&wire.PubSubStatus{}, &wire.PubSubDelta{}, &wire.PubSubMessage{}} {
			if proto.Unmarshal(raw, msg) != nil {
				continue
			}
			in, err := decode(msg)
			if err != nil {
				continue
			}
			r := in.routing()
			if r.from.UID == 0 || r.to.UID == 0 || r.from.Host == "" || r.to.Port < 1 {
				t.Fatalf("decoded a bad route %+v", r)
			}
			switch x := in.(type) {
			case deltaIn:
				for _, bk := range x.buckets {
					if bk.Owner.UID == 0 {
						t.Fatal("bucket owner without uid")
					}
					for i, tp := range bk.Topics {
						if checkTopic(tp) != nil || (i > 0 && bk.Topics[i-1] >= tp) {
							t.Fatalf("bucket topics not valid and normalised: %q", bk.Topics)
						}
					}
				}
			case messageIn:
				if checkTopic(x.topic) != nil || x.payload == nil {
					t.Fatalf("bad message %+v", x)
				}
			}
		}
	})
}
