package mirror

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

// makeBatch is a batch with header h and the records recs, as the writer
// builds it.
func makeBatch(h header, recs ...[]byte) []byte {
	b := appendHeader(nil, h, len(recs))
	for _, r := range recs {
		b = append(b, r...)
	}
	return b
}

// must panics on an encoding error: the test's own records always encode.
func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

const testSess = "ns=1;g=5e3c2a9e-7a1f-4a55-9d1b-0c1f3a2b4c5d"

func testSessionRec() sessionRec {
	return sessionRec{
		tokenHash: [32]byte{1, 2, 3, 31: 32},
		name:      "hmi-1",
		timeout:   90 * time.Second,
		user:      "operator",
		role:      "Operator",
		policy:    "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256",
		mode:      ua.MessageSecurityModeSignAndEncrypt,
		thumb:     bytes.Repeat([]byte{0xab}, 20),
		cert:      bytes.Repeat([]byte{0x30}, 900),
		nonce:     bytes.Repeat([]byte{0x5a}, 32),
		activated: true,
	}
}

func testItemsReq() *ua.CreateMonitoredItemsRequest {
	req := newItemsRequest(42, ua.TimestampsToReturnSource)
	req.ItemsToCreate = []*ua.MonitoredItemCreateRequest{
		{
			ItemToMonitor:  &ua.ReadValueID{NodeID: ua.NewStringNodeID(2, "Line1.Press.Force"), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 7, SamplingInterval: 250, QueueSize: 10, DiscardOldest: true,
				Filter: ua.NewExtensionObject(&ua.DataChangeFilter{Trigger: ua.DataChangeTriggerStatusValue, DeadbandType: uint32(ua.DeadbandTypeAbsolute), DeadbandValue: 0.5})},
		},
		{
			ItemToMonitor:       &ua.ReadValueID{NodeID: ua.NewNumericNodeID(0, 2253), AttributeID: ua.AttributeIDEventNotifier, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode:      ua.MonitoringModeSampling,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 8, QueueSize: 1000, Filter: ua.NewExtensionObject(nil)},
		},
	}
	return req
}

func testSent() *ua.PublishResponse {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	dv := &ua.DataValue{Value: ua.MustVariant(int32(17)), SourceTimestamp: at, ServerTimestamp: at}
	dv.UpdateMask()
	return &ua.PublishResponse{SubscriptionID: 42, NotificationMessage: &ua.NotificationMessage{
		SequenceNumber: 9, PublishTime: at,
		NotificationData: []*ua.ExtensionObject{ua.NewExtensionObject(&ua.DataChangeNotification{
			MonitoredItems:  []*ua.MonitoredItemNotification{{ClientHandle: 7, Value: dv}},
			DiagnosticInfos: []*ua.DiagnosticInfo{},
		})},
	}}
}

// allRecords returns one record of every kind and what it decodes to.
func allRecords(t testing.TB) ([][]byte, []func(t testing.TB, r record)) {
	params := &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 125.5, RequestedLifetimeCount: 2400,
		RequestedMaxKeepAliveCount: 20, MaxNotificationsPerPublish: 500, Priority: 9, PublishingEnabled: true}
	modify := &ua.ModifySubscriptionRequest{RequestHeader: emptyRequestHeader(), SubscriptionID: 42, RequestedPublishingInterval: 1000,
		RequestedLifetimeCount: 60, RequestedMaxKeepAliveCount: 5, MaxNotificationsPerPublish: 3, Priority: 1}
	acks := []*ua.SubscriptionAcknowledgement{{SubscriptionID: 42, SequenceNumber: 8}, nil, {SubscriptionID: 43, SequenceNumber: 1}}
	recs := [][]byte{
		encSession(testSess, testSessionRec()),
		encSession(testSess, sessionRec{}), // anonymous, on None: empty fields
		encSessionGone(testSess, true),
		encSessionGone(testSess, false),
		encSub(testSess, subRec{id: 42, nextSeq: 7, params: params}),
		must(encItems(testSess, itemsRec{sub: 42, ids: []uint32{1001, 1002}, req: testItemsReq()})),
		must(encRequest(testSess, modify)),
		must(encSent(testSess, testSent())),
		encAck(testSess, acks),
		encSubGone("", 42),
		encSimple(kSnapshotEnd, ""),
		encSimple(kTaken, testSess),
	}
	checks := []func(t testing.TB, r record){
		func(t testing.TB, r record) {
			if want := testSessionRec(); !reflect.DeepEqual(r.ms, want) {
				t.Fatalf("session %+v, want %+v", r.ms, want)
			}
		},
		func(t testing.TB, r record) {
			s := r.ms
			if s.tokenHash != [32]byte{} || s.name != "" || s.timeout != 0 || s.user != "" || len(s.thumb)+len(s.cert)+len(s.nonce) != 0 || s.activated {
				t.Fatalf("empty session %+v", s)
			}
		},
		func(t testing.TB, r record) {
			if !r.gone {
				t.Fatal("session gone: deleteSubscriptions lost")
			}
		},
		func(t testing.TB, r record) {
			if r.gone {
				t.Fatal("session gone: deleteSubscriptions invented")
			}
		},
		func(t testing.TB, r record) {
			p := r.sub.params
			if r.sub.id != 42 || r.sub.nextSeq != 7 || p.RequestedPublishingInterval != 125.5 || p.RequestedLifetimeCount != 2400 ||
				p.RequestedMaxKeepAliveCount != 20 || p.MaxNotificationsPerPublish != 500 || p.Priority != 9 || !p.PublishingEnabled {
				t.Fatalf("subscription %+v %+v", r.sub, p)
			}
		},
		func(t testing.TB, r record) {
			want := testItemsReq()
			if r.item.sub != 42 || !reflect.DeepEqual(r.item.ids, []uint32{1001, 1002}) || r.item.req.SubscriptionID != 42 ||
				r.item.req.TimestampsToReturn != ua.TimestampsToReturnSource || len(r.item.req.ItemsToCreate) != 2 {
				t.Fatalf("items %+v", r.item)
			}
			for i, got := range r.item.req.ItemsToCreate {
				w := want.ItemsToCreate[i]
				if got.ItemToMonitor.NodeID.String() != w.ItemToMonitor.NodeID.String() || got.ItemToMonitor.AttributeID != w.ItemToMonitor.AttributeID ||
					got.MonitoringMode != w.MonitoringMode || !reflect.DeepEqual(got.RequestedParameters.Filter.Value, w.RequestedParameters.Filter.Value) {
					t.Fatalf("item %d: %+v, want %+v", i, got, w)
				}
				gp, wp := *got.RequestedParameters, *w.RequestedParameters
				gp.Filter, wp.Filter = nil, nil
				if gp != wp {
					t.Fatalf("item %d parameters %+v, want %+v", i, gp, wp)
				}
			}
		},
		func(t testing.TB, r record) {
			m, ok := r.req.(*ua.ModifySubscriptionRequest)
			if !ok || m.SubscriptionID != 42 || m.RequestedPublishingInterval != 1000 || m.MaxNotificationsPerPublish != 3 || m.Priority != 1 {
				t.Fatalf("request %T %+v", r.req, r.req)
			}
		},
		func(t testing.TB, r record) {
			want := testSent()
			if r.pub.SubscriptionID != 42 || r.pub.NotificationMessage.SequenceNumber != 9 || !r.pub.NotificationMessage.PublishTime.Equal(want.NotificationMessage.PublishTime) {
				t.Fatalf("sent %+v", r.pub)
			}
			dc, ok := r.pub.NotificationMessage.NotificationData[0].Value.(*ua.DataChangeNotification)
			if !ok || len(dc.MonitoredItems) != 1 || dc.MonitoredItems[0].ClientHandle != 7 || dc.MonitoredItems[0].Value.Value.Value() != int32(17) ||
				!dc.MonitoredItems[0].Value.SourceTimestamp.Equal(want.NotificationMessage.PublishTime) {
				t.Fatalf("sent notification %+v", r.pub.NotificationMessage.NotificationData[0].Value)
			}
		},
		func(t testing.TB, r record) {
			if len(r.acks) != 2 || *r.acks[0] != *acks[0] || *r.acks[1] != *acks[2] {
				t.Fatalf("acks %+v", r.acks)
			}
		},
		func(t testing.TB, r record) {
			if r.sub.id != 42 || r.sess != "" {
				t.Fatalf("subscription gone %+v", r.sub)
			}
		},
		func(t testing.TB, r record) {},
		func(t testing.TB, r record) {
			if r.sess != testSess {
				t.Fatalf("taken %q", r.sess)
			}
		},
	}
	return recs, checks
}

func TestBatchRoundTrip(t *testing.T) {
	recs, checks := allRecords(t)
	wantKinds := []kind{kSession, kSession, kSessionGone, kSessionGone, kSub, kItems, kRequest, kSent, kAck, kSubGone, kSnapshotEnd, kTaken}
	h := header{epoch: math.MaxUint64, seq: 3, ackEpoch: 1 << 40, ackSeq: 77, flags: flagResync}
	b := makeBatch(h, recs...)
	gh, got, err := decodeBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	if gh != h {
		t.Fatalf("header %+v, want %+v", gh, h)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	seen := map[kind]bool{}
	for i, r := range got {
		if r.kind != wantKinds[i] {
			t.Fatalf("record %d kind %d, want %d", i, r.kind, wantKinds[i])
		}
		seen[r.kind] = true
		if wantSess := testSess; r.kind != kSubGone && r.kind != kSnapshotEnd && r.sess != wantSess {
			t.Fatalf("record %d session %q", i, r.sess)
		}
		checks[i](t, r)
	}
	for k := kSession; k <= kTaken; k++ {
		if !seen[k] {
			t.Errorf("record kind %d not covered", k)
		}
	}
	// An empty batch: an acknowledgement alone.
	h = header{ackEpoch: 5, ackSeq: 9}
	gh, got, err = decodeBatch(makeBatch(h))
	if err != nil || gh != h || len(got) != 0 {
		t.Fatalf("empty batch: %+v %d %v", gh, len(got), err)
	}
}

func TestBatchRefusedWhole(t *testing.T) {
	recs, _ := allRecords(t)
	good := makeBatch(header{epoch: 1, seq: 1}, recs...)
	// Every truncation of a valid batch is refused, never half applied.
	for n := 0; n < len(good); n++ {
		if _, got, err := decodeBatch(good[:n]); err == nil || got != nil || !errors.Is(err, errInvalid) {
			t.Fatalf("batch cut at %d of %d: %d records, err %v", n, len(good), len(got), err)
		}
	}
	cases := map[string][]byte{
		"trailing bytes":    append(bytes.Clone(good), 0),
		"wrong magic":       append([]byte("OM2"), good[3:]...),
		"oversized":         append(bytes.Clone(good), make([]byte, maxBatchBytes)...),
		"unknown kind":      makeBatch(header{epoch: 1, seq: 1}, recs[0], []byte{99, 0, 0, 0, 0}),
		"kind zero":         makeBatch(header{epoch: 1, seq: 1}, []byte{0, 0, 0, 0, 0}),
		"too many records":  countAt(good, 1<<31),
		"one record more":   countAt(good, uint32(len(recs)+1)),
		"negative timeout":  makeBatch(header{epoch: 1, seq: 1}, encSession(testSess, sessionRec{timeout: -time.Second})),
		"record too long":   makeBatch(header{epoch: 1, seq: 1}, lengthAt(recs[2], math.MaxUint32)),
		"record too short":  makeBatch(header{epoch: 1, seq: 1}, recs[0], lengthAt(recs[4], 3)),
		"bytes after field": makeBatch(header{epoch: 1, seq: 1}, withExtra(recs[2])),
		"string too long":   makeBatch(header{epoch: 1, seq: 1}, encSimple(kTaken, string(make([]byte, maxString+1)))),
		"bytes too long":    makeBatch(header{epoch: 1, seq: 1}, encSession(testSess, sessionRec{cert: make([]byte, maxBytes+1)})),
		"ids beyond record": makeBatch(header{epoch: 1, seq: 1}, itemsWithIDCount(t, maxIDs)),
		"acks beyond":       makeBatch(header{epoch: 1, seq: 1}, ackWithCount(1<<30)),
		"items != ids":      makeBatch(header{epoch: 1, seq: 1}, must(encItems(testSess, itemsRec{sub: 1, ids: []uint32{1}, req: testItemsReq()}))),
		"garbage service":   makeBatch(header{epoch: 1, seq: 1}, garbageService()),
		"request as sent":   makeBatch(header{epoch: 1, seq: 1}, retype(must(encRequest(testSess, &ua.ModifySubscriptionRequest{RequestHeader: emptyRequestHeader()})), kSent)),
		"items as request":  makeBatch(header{epoch: 1, seq: 1}, retype(must(encRequest(testSess, &ua.ModifySubscriptionRequest{RequestHeader: emptyRequestHeader()})), kItems)),
		"response as req":   makeBatch(header{epoch: 1, seq: 1}, retype(must(encSent(testSess, testSent())), kRequest)),
	}
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			h, got, err := decodeBatch(b)
			if err == nil || got != nil || !errors.Is(err, errInvalid) {
				t.Fatalf("decoded %d records (%+v), err %v; want the batch refused", len(got), h, err)
			}
		})
	}
}

// countAt returns b with its record count set to n.
func countAt(b []byte, n uint32) []byte {
	c := bytes.Clone(b)
	binary.LittleEndian.PutUint32(c[len(batchMagic)+33:], n)
	return c
}

// lengthAt returns record r with its length field set to n.
func lengthAt(r []byte, n uint32) []byte {
	c := bytes.Clone(r)
	binary.LittleEndian.PutUint32(c[1:5], n)
	return c
}

// withExtra returns record r with one byte more in its body.
func withExtra(r []byte) []byte {
	c := append(bytes.Clone(r), 0)
	binary.LittleEndian.PutUint32(c[1:5], uint32(len(c)-5))
	return c
}

func retype(r []byte, k kind) []byte {
	c := bytes.Clone(r)
	c[0] = uint8(k)
	return c
}

func itemsWithIDCount(t testing.TB, n uint32) []byte {
	var e enc
	at := e.begin(kItems)
	e.str(testSess)
	e.u32(1)
	e.u32(n)
	e.u32(1)
	e.end(at)
	return e.b
}

func ackWithCount(n uint32) []byte {
	var e enc
	at := e.begin(kAck)
	e.str(testSess)
	e.u32(n)
	e.u32(1)
	e.u32(2)
	e.end(at)
	return e.b
}

// garbageService is a request record whose service message claims an
// array of 2^31 elements.
func garbageService() []byte {
	tid, _ := ua.Encode(ua.NewFourByteExpandedNodeID(0, ua.ServiceTypeID(&ua.DeleteMonitoredItemsRequest{})))
	body, _ := (ua.Encode(&ua.DeleteMonitoredItemsRequest{RequestHeader: emptyRequestHeader(), SubscriptionID: 1, MonitoredItemIDs: []uint32{1}}))
	// The array length is the last four bytes before the one id.
	binary.LittleEndian.PutUint32(body[len(body)-8:], 1<<31-1)
	var e enc
	at := e.begin(kRequest)
	e.str(testSess)
	e.u32(uint32(len(tid) + len(body)))
	e.b = append(append(e.b, tid...), body...)
	e.end(at)
	return e.b
}

// FuzzDecodeBatch: whatever arrives, decodeBatch returns an error or
// records, never panics, and allocates in proportion to the batch, not
// to a length field it carries.
func FuzzDecodeBatch(f *testing.F) {
	recs, _ := allRecords(f)
	f.Add(makeBatch(header{epoch: 1, seq: 1}, recs...))
	for _, r := range recs {
		f.Add(makeBatch(header{epoch: 7, seq: 2, ackEpoch: 3, ackSeq: 4}, r))
	}
	f.Add(makeBatch(header{ackEpoch: 3, ackSeq: 4, flags: flagResync}))
	f.Add(makeBatch(header{epoch: 1, seq: 1}, garbageService()))
	f.Add(makeBatch(header{epoch: 1, seq: 1}, ackWithCount(1<<30)))
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, got, err := decodeBatch(b)
		runtime.ReadMemStats(&after)
		if err != nil {
			if got != nil {
				t.Fatalf("an invalid batch gave %d records", len(got))
			}
			if !errors.Is(err, errInvalid) {
				t.Fatalf("error %v is not errInvalid", err)
			}
		}
		// A record in memory is a few hundred bytes for its 5 on the wire;
		// a gopcua structure a few hundred for its few bytes.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(200*len(b))+1<<20 {
			t.Fatalf("decoding %d bytes allocated %d", len(b), alloc)
		}
		if err == nil && len(got) > len(b)/5 {
			t.Fatalf("%d records from %d bytes", len(got), len(b))
		}
	})
}

// An invalid batch is refused before it costs memory: the record count it
// claims does not size anything up front.
func TestInvalidBatchAllocatesLittle(t *testing.T) {
	body := make([]byte, 1<<20) // a megabyte of kind-0 records
	b := append(appendHeader(nil, header{epoch: 1, seq: 1}, len(body)/5), body...)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, got, err := decodeBatch(b)
	runtime.ReadMemStats(&after)
	if err == nil || got != nil {
		t.Fatalf("decoded %d records, err %v", len(got), err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<10 {
		t.Fatalf("refusing a batch of %d bytes allocated %d bytes", len(b), alloc)
	}
}
