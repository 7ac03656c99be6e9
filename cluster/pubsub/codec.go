package pubsub

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/cluster/wire"
)

// Limits of a received message; anything larger is invalid.
const (
	// MaxTopicLen is the longest topic name, in bytes.
	MaxTopicLen = 256
	// MaxTopicsPerNode is the most topics one node's bucket may list.
	MaxTopicsPerNode = 1024
	// MaxBuckets is the most buckets (nodes) a status or delta may carry.
	MaxBuckets = wire.MaxMembers
)

// ErrInvalid is wrapped by every decoding error of a received message.
var ErrInvalid = errors.New("pubsub: invalid message")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, a...))
}

func uaToWire(u membership.UniqueAddress) *wire.UniqueAddress {
	return &wire.UniqueAddress{Host: u.Host, Port: uint32(u.Port), Uid: u.UID}
}

func uaFromWire(u *wire.UniqueAddress) (membership.UniqueAddress, error) {
	if u == nil {
		return membership.UniqueAddress{}, invalid("missing address")
	}
	host, port := u.GetHost(), u.GetPort()
	if host == "" || len(host) > wire.MaxStringLen || port < 1 || port > 65535 {
		return membership.UniqueAddress{}, invalid("address %q:%d", host, port)
	}
	a := membership.Address{Host: host, Port: int(port)}
	if _, err := membership.ParseAddress(a.String()); err != nil {
		return membership.UniqueAddress{}, invalid("address: %v", err)
	}
	if u.GetUid() == 0 {
		return membership.UniqueAddress{}, invalid("address %v without uid", a)
	}
	return membership.UniqueAddress{Host: host, Port: int(port), UID: u.GetUid()}, nil
}

func checkTopic(t string) error {
	if t == "" || len(t) > MaxTopicLen {
		return invalid("topic %q: need 1..%d bytes", t, MaxTopicLen)
	}
	return nil
}

// route is the sender and receiver of a received message.
type route struct{ from, to membership.UniqueAddress }

// inbound is a decoded, validated message: one of statusIn, deltaIn,
// messageIn.
type inbound interface{ routing() route }

type statusIn struct {
	route
	versions map[membership.UniqueAddress]uint64
	reply    bool
}

type deltaIn struct {
	route
	buckets []Bucket
}

type messageIn struct {
	route
	topic   string
	payload *anypb.Any
	direct  bool
}

func (r route) routing() route { return r }

func decodeRoute(from, to *wire.UniqueAddress) (route, error) {
	f, err := uaFromWire(from)
	if err != nil {
		return route{}, fmt.Errorf("from: %w", err)
	}
	t, err := uaFromWire(to)
	if err != nil {
		return route{}, fmt.Errorf("to: %w", err)
	}
	return route{f, t}, nil
}

// decode validates a received wire message. It never panics; the error
// wraps ErrInvalid.
func decode(pm proto.Message) (inbound, error) {
	switch x := pm.(type) {
	case *wire.PubSubStatus:
		return decodeStatus(x)
	case *wire.PubSubDelta:
		return decodeDelta(x)
	case *wire.PubSubMessage:
		return decodeMessage(x)
	}
	return nil, invalid("unexpected message %T", pm)
}

func decodeStatus(x *wire.PubSubStatus) (inbound, error) {
	r, err := decodeRoute(x.GetFrom(), x.GetTo())
	if err != nil {
		return nil, err
	}
	if len(x.GetVersions()) > MaxBuckets {
		return nil, invalid("%d versions", len(x.GetVersions()))
	}
	vs := make(map[membership.UniqueAddress]uint64, len(x.GetVersions()))
	for _, v := range x.GetVersions() {
		u, err := uaFromWire(v.GetOwner())
		if err != nil {
			return nil, fmt.Errorf("version owner: %w", err)
		}
		vs[u] = max(vs[u], v.GetVersion())
	}
	return statusIn{route: r, versions: vs, reply: x.GetReply()}, nil
}

func decodeDelta(x *wire.PubSubDelta) (inbound, error) {
	r, err := decodeRoute(x.GetFrom(), x.GetTo())
	if err != nil {
		return nil, err
	}
	if len(x.GetBuckets()) > MaxBuckets {
		return nil, invalid("%d buckets", len(x.GetBuckets()))
	}
	bs := make([]Bucket, 0, len(x.GetBuckets()))
	for _, b := range x.GetBuckets() {
		u, err := uaFromWire(b.GetOwner())
		if err != nil {
			return nil, fmt.Errorf("bucket owner: %w", err)
		}
		if len(b.GetTopics()) > MaxTopicsPerNode {
			return nil, invalid("bucket of %v: %d topics", u, len(b.GetTopics()))
		}
		for _, t := range b.GetTopics() {
			if err := checkTopic(t); err != nil {
				return nil, err
			}
		}
		bs = append(bs, Bucket{Owner: u, Version: b.GetVersion(), Topics: normalize(b.GetTopics())})
	}
	return deltaIn{route: r, buckets: bs}, nil
}

func decodeMessage(x *wire.PubSubMessage) (inbound, error) {
	r, err := decodeRoute(x.GetFrom(), x.GetTo())
	if err != nil {
		return nil, err
	}
	if err := checkTopic(x.GetTopic()); err != nil {
		return nil, err
	}
	if x.GetPayload() == nil || x.GetPayload().GetTypeUrl() == "" {
		return nil, invalid("message on %q without payload", x.GetTopic())
	}
	return messageIn{route: r, topic: x.GetTopic(), payload: x.GetPayload(), direct: x.GetDirect()}, nil
}

func statusToWire(from, to membership.UniqueAddress, vs map[membership.UniqueAddress]uint64, reply bool) *wire.PubSubStatus {
	out := &wire.PubSubStatus{From: uaToWire(from), To: uaToWire(to), Reply: reply}
	for u, v := range vs {
		out.Versions = append(out.Versions, &wire.PubSubVersion{Owner: uaToWire(u), Version: v})
	}
	return out
}

func deltaToWire(from, to membership.UniqueAddress, bs []Bucket) *wire.PubSubDelta {
	out := &wire.PubSubDelta{From: uaToWire(from), To: uaToWire(to)}
	for _, b := range bs {
		out.Buckets = append(out.Buckets, &wire.PubSubBucket{Owner: uaToWire(b.Owner), Version: b.Version, Topics: b.Topics})
	}
	return out
}

func messageToWire(from, to membership.UniqueAddress, topic string, payload *anypb.Any, direct bool) *wire.PubSubMessage {
	return &wire.PubSubMessage{From: uaToWire(from), To: uaToWire(to), Topic: topic, Payload: payload, Direct: direct}
}
