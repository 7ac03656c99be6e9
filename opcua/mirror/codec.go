package mirror

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaserver/uabin"
	"github.com/otopcua/otopcua/opcua/uawire"
)

// A batch is what one member sends another in one Transport.Send:
//
//	"OM1" | epoch u64 | seq u64 | ackEpoch u64 | ackSeq u64 | flags u8 | count u32 | records
//
// epoch and seq number the sender's stream of records to the receiver
// (seq counts batches from 1 in each epoch; a new epoch starts with a
// snapshot); ackEpoch and ackSeq acknowledge the receiver's stream to the
// sender. A record is kind u8 | length u32 | payload. Every length is
// checked against what is left before anything is allocated, and OPC UA
// structures travel as service messages that pass uawire.CheckService
// before gopcua decodes them.

const batchMagic = "OM1"

// Limits of what a batch may hold.
const (
	maxBatchBytes  = 4 << 20 // one Transport message
	maxRecordBytes = maxBatchBytes - 64
	maxString      = 4096
	maxBytes       = 16 << 10 // certificates, nonces
	maxIDs         = 100_000
	itemsPerRecord = 1000 // items of one kItems record
)

// Batch flags.
const (
	flagResync = 1 << iota // the sender lost this receiver's stream: send a new snapshot
)

// Record kinds.
type kind uint8

const (
	kSession     kind = iota + 1 // a session: created, activated, taken over
	kSessionGone                 // a session ended
	kSub                         // a subscription created (ids of the serving member)
	kItems                       // monitored items created
	kRequest                     // any other subscription service request, applied as it is
	kSent                        // a PublishResponse with notifications was sent
	kAck                         // acknowledgements of a Publish request
	kSubGone                     // a subscription's lifetime ran out
	kSnapshotEnd                 // the snapshot of an epoch is complete
	kTaken                       // a session was taken over by the sender
)

var errInvalid = errors.New("mirror: invalid batch")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errInvalid, fmt.Sprintf(format, a...))
}

// header is a batch's header.
type header struct {
	epoch, seq       uint64
	ackEpoch, ackSeq uint64
	flags            uint8
}

// record is one decoded record.
type record struct {
	kind kind
	sess string // session NodeId as a string
	ms   sessionRec
	gone bool // kSessionGone: delete subscriptions
	sub  subRec
	item itemsRec
	req  ua.Request
	pub  *ua.PublishResponse
	acks []*ua.SubscriptionAcknowledgement
}

type sessionRec struct {
	tokenHash [32]byte
	name      string
	timeout   time.Duration
	user      string
	role      string
	policy    string
	mode      ua.MessageSecurityMode
	thumb     []byte
	cert      []byte
	nonce     []byte
	activated bool
}

type subRec struct {
	id      uint32
	nextSeq uint32
	params  *ua.CreateSubscriptionRequest
}

type itemsRec struct {
	sub uint32
	ids []uint32
	req *ua.CreateMonitoredItemsRequest
}

// --- encoding ---

type enc struct{ b []byte }

func (e *enc) u8(v uint8)   { e.b = append(e.b, v) }
func (e *enc) u32(v uint32) { e.b = binary.LittleEndian.AppendUint32(e.b, v) }
func (e *enc) u64(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }
func (e *enc) bytes(v []byte) {
	e.u32(uint32(len(v)))
	e.b = append(e.b, v...)
}
func (e *enc) str(v string) { e.bytes([]byte(v)) }
func (e *enc) flag(v bool) {
	if v {
		e.u8(1)
	} else {
		e.u8(0)
	}
}

// begin starts a record of kind k; end fills in its length.
func (e *enc) begin(k kind) int {
	e.u8(uint8(k))
	e.u32(0)
	return len(e.b)
}

func (e *enc) end(at int) {
	binary.LittleEndian.PutUint32(e.b[at-4:at], uint32(len(e.b)-at))
}

// service appends an OPC UA request or response as a service message.
func (e *enc) service(v any) error {
	id := ua.ServiceTypeID(v)
	if id == 0 {
		return fmt.Errorf("mirror: %T is not a service", v)
	}
	tid, err := ua.Encode(ua.NewFourByteExpandedNodeID(0, id))
	if err != nil {
		return err
	}
	body, err := ua.Encode(v)
	if err != nil {
		return fmt.Errorf("mirror: encode %T: %w", v, err)
	}
	e.u32(uint32(len(tid) + len(body)))
	e.b = append(append(e.b, tid...), body...)
	return nil
}

func appendHeader(b []byte, h header, count int) []byte {
	e := enc{b: append(b, batchMagic...)}
	e.u64(h.epoch)
	e.u64(h.seq)
	e.u64(h.ackEpoch)
	e.u64(h.ackSeq)
	e.u8(h.flags)
	e.u32(uint32(count))
	return e.b
}

func encSession(id string, s sessionRec) []byte {
	var e enc
	at := e.begin(kSession)
	e.str(id)
	e.b = append(e.b, s.tokenHash[:]...)
	e.str(s.name)
	e.u64(uint64(s.timeout))
	e.str(s.user)
	e.str(s.role)
	e.str(s.policy)
	e.u32(uint32(s.mode))
	e.bytes(s.thumb)
	e.bytes(s.cert)
	e.bytes(s.nonce)
	e.flag(s.activated)
	e.end(at)
	return e.b
}

func encSessionGone(id string, deleteSubs bool) []byte {
	var e enc
	at := e.begin(kSessionGone)
	e.str(id)
	e.flag(deleteSubs)
	e.end(at)
	return e.b
}

func encSimple(k kind, id string) []byte {
	var e enc
	at := e.begin(k)
	e.str(id)
	e.end(at)
	return e.b
}

func encSub(id string, s subRec) []byte {
	var e enc
	at := e.begin(kSub)
	e.str(id)
	e.u32(s.id)
	e.u32(s.nextSeq)
	p := s.params
	e.u64(math.Float64bits(p.RequestedPublishingInterval))
	e.u32(p.RequestedLifetimeCount)
	e.u32(p.RequestedMaxKeepAliveCount)
	e.u32(p.MaxNotificationsPerPublish)
	e.u8(p.Priority)
	e.flag(p.PublishingEnabled)
	e.end(at)
	return e.b
}

func encSubGone(id string, sub uint32) []byte {
	var e enc
	at := e.begin(kSubGone)
	e.str(id)
	e.u32(sub)
	e.end(at)
	return e.b
}

func encItems(id string, it itemsRec) ([]byte, error) {
	var e enc
	at := e.begin(kItems)
	e.str(id)
	e.u32(it.sub)
	e.u32(uint32(len(it.ids)))
	for _, v := range it.ids {
		e.u32(v)
	}
	if err := e.service(it.req); err != nil {
		return nil, err
	}
	e.end(at)
	return e.b, nil
}

func encRequest(id string, req ua.Request) ([]byte, error) {
	var e enc
	at := e.begin(kRequest)
	e.str(id)
	if err := e.service(req); err != nil {
		return nil, err
	}
	e.end(at)
	return e.b, nil
}

// encSent encodes the part of a PublishResponse a replica needs: the
// subscription and its NotificationMessage.
func encSent(key string, r *ua.PublishResponse) ([]byte, error) {
	var e enc
	at := e.begin(kSent)
	e.str(key)
	e.u32(0)
	lenAt := len(e.b)
	var err error
	// uabin's fast path: this runs for every message a client gets.
	e.b, err = uabin.AppendResponse(e.b, id.PublishResponse_Encoding_DefaultBinary, &ua.PublishResponse{
		ResponseHeader:      emptyResponseHeader(),
		SubscriptionID:      r.SubscriptionID,
		NotificationMessage: r.NotificationMessage,
		Results:             []ua.StatusCode{},
		DiagnosticInfos:     []*ua.DiagnosticInfo{},
	})
	if err != nil {
		return nil, fmt.Errorf("mirror: encode a PublishResponse: %w", err)
	}
	binary.LittleEndian.PutUint32(e.b[lenAt-4:lenAt], uint32(len(e.b)-lenAt))
	e.end(at)
	return e.b, nil
}

func encAck(id string, acks []*ua.SubscriptionAcknowledgement) []byte {
	var e enc
	at := e.begin(kAck)
	e.str(id)
	n := 0
	for _, a := range acks {
		if a != nil {
			n++
		}
	}
	e.u32(uint32(n))
	for _, a := range acks {
		if a != nil {
			e.u32(a.SubscriptionID)
			e.u32(a.SequenceNumber)
		}
	}
	e.end(at)
	return e.b
}

func emptyResponseHeader() *ua.ResponseHeader {
	return &ua.ResponseHeader{ServiceDiagnostics: &ua.DiagnosticInfo{}, AdditionalHeader: ua.NewExtensionObject(nil)}
}

func emptyRequestHeader() *ua.RequestHeader {
	return &ua.RequestHeader{AuthenticationToken: ua.NewTwoByteNodeID(0), AdditionalHeader: ua.NewExtensionObject(nil)}
}

// --- decoding ---

type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = invalid("truncated")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8() uint8 {
	if b := d.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) u32() uint32 {
	if b := d.take(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *dec) u64() uint64 {
	if b := d.take(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *dec) bytesMax(limit int) []byte {
	n := d.u32()
	if d.err == nil && int64(n) > int64(limit) {
		d.err = invalid("field of %d bytes, at most %d", n, limit)
		return nil
	}
	return d.take(int(n))
}

func (d *dec) str() string { return string(d.bytesMax(maxString)) }

func (d *dec) ids() []uint32 {
	n := d.u32()
	if d.err == nil && (n > maxIDs || int(n)*4 > len(d.b)) {
		d.err = invalid("%d ids", n)
		return nil
	}
	out := make([]uint32, 0, n)
	for range n {
		out = append(out, d.u32())
	}
	return out
}

// service decodes a service message after uawire.CheckService passed it.
func (d *dec) service() any {
	b := d.bytesMax(maxRecordBytes)
	if d.err != nil {
		return nil
	}
	return d.serviceOf(b)
}

// sent decodes the PublishResponse of a Sent record: a message of data
// changes (nearly every one) with uabin's decoder, which builds what
// ua.DecodeService builds at a fraction of its cost — a standby decodes
// one for every message its peer's clients get; anything else with
// ua.DecodeService.
func (d *dec) sent() any {
	b := d.bytesMax(maxRecordBytes)
	if d.err != nil {
		return nil
	}
	if sub, msg, err := uabin.DecodePublishNotifications(b); err == nil {
		return &ua.PublishResponse{SubscriptionID: sub, NotificationMessage: msg}
	}
	return d.serviceOf(b)
}

// serviceOf decodes the service message b after uawire.CheckService
// passed it.
func (d *dec) serviceOf(b []byte) any {
	if code := uawire.CheckService(b); code != ua.StatusOK {
		d.err = invalid("service message: %v", code)
		return nil
	}
	_, v, err := ua.DecodeService(b)
	if err != nil {
		d.err = invalid("service message: %v", err)
		return nil
	}
	return v
}

// headerLen is the length of a batch's header before its record count.
const headerLen = len(batchMagic) + 4*8 + 1

// headerOf reads a batch's header only; false when the batch does not
// start with one.
func headerOf(b []byte) (header, bool) {
	var h header
	if len(b) > maxBatchBytes || len(b) < headerLen || string(b[:len(batchMagic)]) != batchMagic {
		return h, false
	}
	d := &dec{b: b[len(batchMagic):]}
	h.epoch, h.seq, h.ackEpoch, h.ackSeq = d.u64(), d.u64(), d.u64(), d.u64()
	h.flags = d.u8()
	return h, d.err == nil
}

// decodeBatch decodes a whole batch; an invalid one is refused whole.
func decodeBatch(b []byte) (header, []record, error) {
	if len(b) > maxBatchBytes {
		return header{}, nil, invalid("batch of %d bytes", len(b))
	}
	h, ok := headerOf(b)
	if !ok {
		return h, nil, invalid("no batch")
	}
	d := &dec{b: b[headerLen:]}
	n := d.u32()
	if d.err == nil && int64(n)*5 > int64(len(d.b)) {
		return h, nil, invalid("%d records in %d bytes", n, len(d.b))
	}
	// A record decodes to a few hundred bytes from as few as nine: n sizes
	// nothing before the records prove it.
	recs := make([]record, 0, min(n, 64))
	for range n {
		k := kind(d.u8())
		body := d.bytesMax(maxRecordBytes)
		if d.err != nil {
			return h, nil, d.err
		}
		r, err := decodeRecord(k, body)
		if err != nil {
			return h, nil, err
		}
		recs = append(recs, r)
	}
	if d.err != nil {
		return h, nil, d.err
	}
	if len(d.b) != 0 {
		return h, nil, invalid("%d bytes after the records", len(d.b))
	}
	return h, recs, nil
}

func decodeRecord(k kind, body []byte) (record, error) {
	d := &dec{b: body}
	r := record{kind: k, sess: d.str()}
	switch k {
	case kSession:
		copy(r.ms.tokenHash[:], d.take(32))
		r.ms.name = d.str()
		r.ms.timeout = time.Duration(d.u64())
		r.ms.user, r.ms.role, r.ms.policy = d.str(), d.str(), d.str()
		r.ms.mode = ua.MessageSecurityMode(d.u32())
		r.ms.thumb, r.ms.cert, r.ms.nonce = d.bytesMax(maxBytes), d.bytesMax(maxBytes), d.bytesMax(maxBytes)
		r.ms.activated = d.u8() == 1
		if r.ms.timeout < 0 {
			return r, invalid("session timeout %v", r.ms.timeout)
		}
	case kSessionGone:
		r.gone = d.u8() == 1
	case kSub:
		r.sub.id, r.sub.nextSeq = d.u32(), d.u32()
		p := &ua.CreateSubscriptionRequest{RequestHeader: emptyRequestHeader()}
		p.RequestedPublishingInterval = math.Float64frombits(d.u64())
		p.RequestedLifetimeCount, p.RequestedMaxKeepAliveCount, p.MaxNotificationsPerPublish = d.u32(), d.u32(), d.u32()
		p.Priority = d.u8()
		p.PublishingEnabled = d.u8() == 1
		r.sub.params = p
	case kSubGone:
		r.sub.id = d.u32()
	case kItems:
		r.item.sub = d.u32()
		r.item.ids = d.ids()
		req, ok := d.service().(*ua.CreateMonitoredItemsRequest)
		if d.err == nil && (!ok || len(req.ItemsToCreate) != len(r.item.ids)) {
			return r, invalid("items record")
		}
		r.item.req = req
	case kRequest:
		req, ok := d.service().(ua.Request)
		if d.err == nil && !ok {
			return r, invalid("request record")
		}
		r.req = req
	case kSent:
		pub, ok := d.sent().(*ua.PublishResponse)
		if d.err == nil && (!ok || pub.NotificationMessage == nil) {
			return r, invalid("sent record")
		}
		r.pub = pub
	case kAck:
		n := d.u32()
		if d.err == nil && int64(n)*8 > int64(len(d.b)) {
			return r, invalid("%d acknowledgements", n)
		}
		for range n {
			r.acks = append(r.acks, &ua.SubscriptionAcknowledgement{SubscriptionID: d.u32(), SequenceNumber: d.u32()})
		}
	case kSnapshotEnd, kTaken:
	default:
		return r, invalid("record kind %d", k)
	}
	if d.err != nil {
		return r, d.err
	}
	if len(d.b) != 0 {
		return r, invalid("%d bytes after record %d", len(d.b), k)
	}
	return r, nil
}
