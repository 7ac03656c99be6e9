package main

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// messagesPerFuzzConn is how many fuzzed messages one connection carries
// at most (fewer when the server closes it first).
const messagesPerFuzzConn = 4

// fuzzRandomBody sends MSG chunks that are framed correctly (channel,
// token, sequence and request numbers right) but whose body is random.
func (a *Abuse) fuzzRandomBody(ctx context.Context, r *rand.Rand) {
	a.fuzzOnChannel(ctx, "fuzz/random-body", func(rc *rawConn) []byte {
		body := make([]byte, 1+r.IntN(2000))
		for i := range body {
			body[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 {
			// Half of them start with a real request type, so that the
			// body reaches that request's decoder.
			types := []uint32{id.ReadRequest_Encoding_DefaultBinary, id.BrowseRequest_Encoding_DefaultBinary,
				id.CreateSessionRequest_Encoding_DefaultBinary, id.CreateMonitoredItemsRequest_Encoding_DefaultBinary,
				id.WriteRequest_Encoding_DefaultBinary, id.PublishRequest_Encoding_DefaultBinary}
			if len(body) < 4 {
				body = append(body, 0, 0, 0)
			}
			body[0], body[1] = 0x01, 0x00 // four-byte NodeId, namespace 0
			binary.LittleEndian.PutUint16(body[2:], uint16(types[r.IntN(len(types))]))
		}
		return rc.msgChunk(body)
	})
}

// fuzzBitflip sends valid requests with one to eight bits flipped
// anywhere after the chunk's type and size (channel id, token, sequence
// header and body).
func (a *Abuse) fuzzBitflip(ctx context.Context, r *rand.Rand) {
	a.fuzzOnChannel(ctx, "fuzz/bitflip", func(rc *rawConn) []byte {
		req := validRequests[r.IntN(len(validRequests))]()
		cs, err := rc.chunks(req, nil, opTimeout)
		if err != nil || len(cs) != 1 {
			panic("soak: a template request must encode to one chunk")
		}
		b := cs[0]
		for range 1 + r.IntN(8) {
			i := 8 + r.IntN(len(b)-8)
			b[i] ^= 1 << r.IntN(8)
		}
		return b
	})
}

// validRequests are the templates fuzzBitflip corrupts.
var validRequests = []func() ua.Request{
	func() ua.Request {
		return &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth, NodesToRead: []*ua.ReadValueID{
			{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}
	},
	func() ua.Request {
		return &ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}, NodesToBrowse: []*ua.BrowseDescription{{
			NodeID: ua.NewNumericNodeID(0, id.ObjectsFolder), BrowseDirection: ua.BrowseDirectionForward,
			ReferenceTypeID: ua.NewNumericNodeID(0, id.References), IncludeSubtypes: true, ResultMask: uint32(ua.BrowseResultMaskAll)}}}
	},
	func() ua.Request { return &ua.GetEndpointsRequest{EndpointURL: "opc.tcp://127.0.0.1:4840"} },
	func() ua.Request {
		return createSessionRequest("opc.tcp://127.0.0.1:4840", rand.New(rand.NewPCG(1, 2)), hostileTimeout)
	},
	func() ua.Request {
		return &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, RequestedLifetimeCount: 30,
			RequestedMaxKeepAliveCount: 10, PublishingEnabled: true}
	},
	func() ua.Request {
		a := &Abuse{Vars: []uint32{id.Server_ServiceLevel, id.Server_ServerStatus_CurrentTime}}
		return a.itemsRequest(1, 0, 0, 10)
	},
	func() ua.Request {
		return &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel),
			AttributeID: ua.AttributeIDValue, Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(byte(7))}}}}
	},
	func() ua.Request {
		return &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{{SubscriptionID: 1, SequenceNumber: 1}}}
	},
	func() ua.Request {
		return &ua.TranslateBrowsePathsToNodeIDsRequest{BrowsePaths: []*ua.BrowsePath{{StartingNode: ua.NewNumericNodeID(0, id.ObjectsFolder),
			RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{{ReferenceTypeID: ua.NewNumericNodeID(0, id.HierarchicalReferences),
				IncludeSubtypes: true, TargetName: &ua.QualifiedName{Name: "Server"}}}}}}}
	},
}

// fuzzOnChannel opens a secure channel properly and sends it up to
// messagesPerFuzzConn messages made by next, counting the server's answer
// to each; it stops when the server closes the connection.
func (a *Abuse) fuzzOnChannel(ctx context.Context, name string, next func(rc *rawConn) []byte) {
	rc, err := a.rawChannel(ctx)
	if err != nil {
		a.note(ctx, name, "channel: ", err)
		return
	}
	defer rc.close()
	for range messagesPerFuzzConn {
		if err := rc.write(next(rc), opTimeout); err != nil {
			a.note(ctx, name, "send: ", err)
			return
		}
		ans := rc.answer(answerTimeout)
		if ended(ctx) {
			a.Tally.Saw(name, cutShort)
			return
		}
		a.Tally.Saw(name, ans)
		if ans == "closed" || ans == "no answer" || (len(ans) > 4 && ans[:4] == "ERR ") {
			return
		}
	}
}

// fuzzHello sends a random Hello: random bytes after a HELF header whose
// size is right, a Hello with random fields, or bytes that are not even a
// UACP header.
func (a *Abuse) fuzzHello(ctx context.Context, r *rand.Rand) {
	const name = "fuzz/random-hello"
	rc, err := dialRaw(ctx, a.Endpoint, opTimeout, a.LocalIP)
	if err != nil {
		a.note(ctx, name, "dial: ", err)
		return
	}
	defer rc.close()
	var frame []byte
	switch r.IntN(3) {
	case 0:
		frame = uacpFrame("HELF", randomBytes(r, r.IntN(100)))
	case 1:
		frame = helloFrame(a.Endpoint)
		for i := 8; i < 28; i++ { // version, buffer sizes, limits
			if r.IntN(3) == 0 {
				frame[i] = byte(r.Uint32())
			}
		}
		if r.IntN(2) == 0 { // the URL's length lies
			binary.LittleEndian.PutUint32(frame[28:], r.Uint32())
		}
	default:
		frame = randomBytes(r, 8+r.IntN(56))
	}
	if err := rc.write(frame, opTimeout); err != nil {
		a.note(ctx, name, "send: ", err)
		return
	}
	a.noteFrame(ctx, name, rc)
}

// noteFrame counts the first frame the server answers on rc ("ACK" for an
// Acknowledge).
func (a *Abuse) noteFrame(ctx context.Context, name string, rc *rawConn) {
	typ, _, err := rc.readFrame(answerTimeout)
	if err == nil {
		a.Tally.Saw(name, typ[:3])
		return
	}
	a.note(ctx, name, "", err)
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// fuzzOversized declares sizes far beyond what the server accepts, in
// rotation: a Hello of 4 GiB; a Hello of 1 MiB that never comes; after a
// valid OpenSecureChannel, a MSG chunk of 2 GiB, a Read whose NodesToRead
// claims 2^31−1 elements, and a message of intermediate chunks beyond the
// 4 MiB the server announced; an OpenSecureChannel of 4 GiB.
func (a *Abuse) fuzzOversized(ctx context.Context, r *rand.Rand) {
	const name = "fuzz/oversized"
	variant := r.IntN(6)
	if variant <= 1 || variant == 5 {
		rc, err := dialRaw(ctx, a.Endpoint, opTimeout, a.LocalIP)
		if err != nil {
			a.note(ctx, name, "dial: ", err)
			return
		}
		defer rc.close()
		var frame []byte
		switch variant {
		case 0:
			frame = []byte("HELF\xff\xff\xff\xff")
		case 1:
			frame = append([]byte("HELF\x00\x00\x10\x00"), randomBytes(r, 100)...)
		case 5:
			if err := rc.hello(opTimeout); err != nil {
				a.note(ctx, name, "hello: ", err)
				return
			}
			frame = append([]byte("OPNF\xff\xff\xff\xff\x00\x00\x00\x00"), randomBytes(r, 100)...)
		}
		if err := rc.write(frame, opTimeout); err != nil {
			a.note(ctx, name, "send: ", err)
			return
		}
		a.noteFrame(ctx, name, rc)
		return
	}
	a.fuzzOnChannel(ctx, name, func(rc *rawConn) []byte {
		switch variant {
		case 2:
			b := rc.msgChunk(randomBytes(r, 100))
			binary.LittleEndian.PutUint32(b[4:], 0x7ffffff0)
			return b
		case 3:
			return lyingRead(rc)
		}
		return overlongMessage(rc)
	})
}

// lyingRead is a Read of one node whose NodesToRead length says
// 2^31−1.
func lyingRead(rc *rawConn) []byte {
	req := validRequests[0]().(*ua.ReadRequest)
	cs, err := rc.chunks(req, nil, opTimeout)
	if err != nil || len(cs) != 1 {
		panic("soak: a Read of one node must encode to one chunk")
	}
	binary.LittleEndian.PutUint32(cs[0][nodesToReadAt(req):], 0x7fffffff)
	return cs[0]
}

// nodesToReadAt is where the NodesToRead length of req's chunk is: after
// the chunk header, the type NodeId (4 bytes), the request header, MaxAge
// (8) and TimestampsToReturn (4).
func nodesToReadAt(req *ua.ReadRequest) int {
	hdr, err := ua.Encode(req.RequestHeader)
	if err != nil {
		panic("soak: encode a request header: " + err.Error())
	}
	return chunkHead + 4 + len(hdr) + 8 + 4
}

// overlongMessage is one request of intermediate chunks totalling more
// than the server's 4 MiB MaxMessageSize, then a final chunk.
func overlongMessage(rc *rawConn) []byte {
	body := make([]byte, rc.maxBody)
	var out []byte
	for total := 0; total <= 4<<20+len(body); total += len(body) {
		c := rc.msgChunk(body)
		rc.reqID-- // every chunk belongs to the same request
		c[3] = 'C'
		out = append(out, c...)
	}
	return append(out, rc.msgChunk(body)...)
}
