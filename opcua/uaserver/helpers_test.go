package uaserver

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
	"go.uber.org/goleak"

	"github.com/otopcua/otopcua/opcua/subscription"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Node ids of the fake address space.
var (
	nodeTemp    = ua.NewStringNodeID(1, "Temp")
	nodePanic   = ua.NewStringNodeID(1, "Panic")
	nodeBlock   = ua.NewStringNodeID(1, "Block")
	nodeObjects = ua.NewNumericNodeID(0, id.ObjectsFolder)
	nodeReset   = ua.NewStringNodeID(1, "Reset") // a method component of nodeObjects
	nodeNSArray = ua.NewNumericNodeID(0, id.Server_NamespaceArray)
)

// objectsRefs is the number of references the fake Objects folder has.
const objectsRefs = 25

// fakeStore is a tiny NodeStore: the namespace array, one writable double
// variable "Temp", a node whose Read panics, and an Objects folder with
// objectsRefs children.
type fakeStore struct {
	mu   sync.Mutex
	temp float64
}

var _ NodeStore = (*fakeStore)(nil)

func newFakeStore() *fakeStore { return &fakeStore{temp: 21.5} }

func (f *fakeStore) Read(rv *ua.ReadValueID, ttr ua.TimestampsToReturn) *ua.DataValue {
	switch rv.NodeID.String() {
	case nodePanic.String():
		panic("fake store: read of the panic node")
	case nodeNSArray.String():
		return goodValue([]string{"http://opcfoundation.org/UA/", "urn:otopcua:test"})
	case nodeTemp.String():
		if rv.AttributeID == ua.AttributeIDAccessLevel {
			return goodValue(byte(ua.AccessLevelTypeCurrentRead | ua.AccessLevelTypeCurrentWrite | ua.AccessLevelTypeHistoryRead))
		}
		if rv.AttributeID != ua.AttributeIDValue {
			return badValue(ua.StatusBadAttributeIDInvalid)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return goodValue(f.temp)
	case nodeObjects.String():
		switch rv.AttributeID {
		case ua.AttributeIDNodeClass:
			return goodValue(int32(ua.NodeClassObject))
		case ua.AttributeIDEventNotifier:
			return goodValue(byte(0x05)) // SubscribeToEvents | HistoryRead
		}
		return badValue(ua.StatusBadAttributeIDInvalid)
	}
	return badValue(ua.StatusBadNodeIDUnknown)
}

func (f *fakeStore) Write(wv *ua.WriteValue) ua.StatusCode {
	if !wv.NodeID.Equal(nodeTemp) {
		return ua.StatusBadNodeIDUnknown
	}
	if wv.AttributeID != ua.AttributeIDValue {
		return ua.StatusBadNotWritable
	}
	v, ok := wv.Value.Value.Value().(float64)
	if !ok {
		return ua.StatusBadTypeMismatch
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.temp = v
	return ua.StatusOK
}

func (f *fakeStore) Browse(d *ua.BrowseDescription) ([]*ua.ReferenceDescription, ua.StatusCode) {
	if !d.NodeID.Equal(nodeObjects) {
		return nil, ua.StatusBadNodeIDUnknown
	}
	if d.NodeClassMask == uint32(ua.NodeClassMethod) {
		return []*ua.ReferenceDescription{{ReferenceTypeID: ua.NewNumericNodeID(0, id.HasComponent), IsForward: true,
			NodeID: ua.NewExpandedNodeID(nodeReset, "", 0), NodeClass: ua.NodeClassMethod}}, ua.StatusOK
	}
	refs := make([]*ua.ReferenceDescription, objectsRefs)
	for i := range refs {
		name := fmt.Sprintf("Child%02d", i)
		refs[i] = &ua.ReferenceDescription{
			ReferenceTypeID: ua.NewNumericNodeID(0, id.Organizes),
			IsForward:       true,
			NodeID:          ua.NewExpandedNodeID(ua.NewStringNodeID(1, name), "", 0),
			BrowseName:      &ua.QualifiedName{NamespaceIndex: 1, Name: name},
			NodeClass:       ua.NodeClassObject,
			// DisplayName and TypeDefinition left nil on purpose: the
			// server must fill them before encoding.
		}
	}
	return refs, ua.StatusOK
}

func (f *fakeStore) TranslateBrowsePath(p *ua.BrowsePath) *ua.BrowsePathResult {
	return &ua.BrowsePathResult{StatusCode: ua.StatusBadNoMatch}
}

func goodValue(v any) *ua.DataValue {
	return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}
}

// fakeEngine records what the server asks of the subscription engine.
type fakeEngine struct {
	mu       sync.Mutex
	closed   []closedSession
	publish  chan pendingPublish
	sessions map[subscription.SessionID]bool
}

type closedSession struct {
	sid subscription.SessionID
	del bool
}

type pendingPublish struct {
	sid    subscription.SessionID
	out    subscription.Sender
	reqID  uint32
	handle uint32
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{publish: make(chan pendingPublish, 16)}
}

func (e *fakeEngine) closedSessions() []closedSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]closedSession(nil), e.closed...)
}

func (e *fakeEngine) CreateSubscription(subscription.SessionID, *ua.CreateSubscriptionRequest) (*ua.CreateSubscriptionResponse, error) {
	return &ua.CreateSubscriptionResponse{SubscriptionID: 7, RevisedPublishingInterval: 100, RevisedLifetimeCount: 30, RevisedMaxKeepAliveCount: 10}, nil
}
func (e *fakeEngine) ModifySubscription(subscription.SessionID, *ua.ModifySubscriptionRequest) (*ua.ModifySubscriptionResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) SetPublishingMode(subscription.SessionID, *ua.SetPublishingModeRequest) (*ua.SetPublishingModeResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) DeleteSubscriptions(subscription.SessionID, *ua.DeleteSubscriptionsRequest) (*ua.DeleteSubscriptionsResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) CreateMonitoredItemsContext(context.Context, subscription.SessionID, *ua.CreateMonitoredItemsRequest) (*ua.CreateMonitoredItemsResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) ModifyMonitoredItems(subscription.SessionID, *ua.ModifyMonitoredItemsRequest) (*ua.ModifyMonitoredItemsResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) SetMonitoringMode(subscription.SessionID, *ua.SetMonitoringModeRequest) (*ua.SetMonitoringModeResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) SetTriggering(subscription.SessionID, *ua.SetTriggeringRequest) (*ua.SetTriggeringResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}

// DeleteMonitoredItems mimics a buggy engine that returns a nil response
// without an error: the server must still answer.
func (e *fakeEngine) DeleteMonitoredItems(subscription.SessionID, *ua.DeleteMonitoredItemsRequest) (*ua.DeleteMonitoredItemsResponse, error) {
	return nil, nil
}
func (e *fakeEngine) Republish(subscription.SessionID, *ua.RepublishRequest) (*ua.RepublishResponse, error) {
	return nil, ua.StatusBadMessageNotAvailable
}
func (e *fakeEngine) TransferSubscriptionsAs(subscription.SessionID, string, *ua.TransferSubscriptionsRequest) (*ua.TransferSubscriptionsResponse, error) {
	return nil, ua.StatusBadSubscriptionIDInvalid
}
func (e *fakeEngine) SetOwner(uint32, string) {}
func (e *fakeEngine) Publish(sid subscription.SessionID, out subscription.Sender, reqID uint32, req *ua.PublishRequest) {
	e.publish <- pendingPublish{sid: sid, out: out, reqID: reqID, handle: req.RequestHeader.RequestHandle}
}
func (e *fakeEngine) SessionClosed(sid subscription.SessionID, del bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = append(e.closed, closedSession{sid, del})
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testServer is a started server on 127.0.0.1 with a fake store and engine.
type testServer struct {
	*Server
	store  *fakeStore
	engine *fakeEngine
	logs   *syncBuffer
	url    string // opc.tcp://127.0.0.1:<port>
}

// startServer starts a server; setup may change the config and register
// handlers before Start. The server is closed when the test ends.
func startServer(t testing.TB, setup func(*Config), handlers ...func(*Server)) *testServer {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		ListenAddr:     "127.0.0.1:0",
		ApplicationURI: "urn:otopcua:test:a",
		Logger:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if setup != nil {
		setup(&cfg)
	}
	store := newFakeStore()
	srv, err := New(cfg, store, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	eng := newFakeEngine()
	srv.subs = eng
	for _, h := range handlers {
		h(srv)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &testServer{Server: srv, store: store, engine: eng, logs: logs,
		url: "opc.tcp://" + srv.Addr().String()}
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connectClient connects gopcua's client with security None and an
// anonymous session; it is closed when the test ends.
func connectClient(t *testing.T, url string, opts ...opcua.Option) *opcua.Client {
	t.Helper()
	opts = append([]opcua.Option{
		opcua.SecurityMode(ua.MessageSecurityModeNone),
		opcua.AutoReconnect(false),
		opcua.RequestTimeout(5 * time.Second),
	}, opts...)
	c, err := opcua.NewClient(url, opts...)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	ctx := testCtx(t)
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("Connect %s: %v", url, err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// rawClient is a bare secure channel: it sends any request and shows the
// response as the server wrote it.
type rawClient struct {
	t     testing.TB
	conn  *uacp.Conn
	sc    *uasc.SecureChannel
	token *ua.NodeID
	once  sync.Once
}

func dialRaw(t testing.TB, url string) *rawClient {
	t.Helper()
	return dialRawFrom(t, url, "")
}

// dialRawFrom is dialRaw from the local address ip ("" lets the kernel
// choose): clients of different machines dial from 127.0.0.2, 127.0.0.3...
func dialRawFrom(t testing.TB, url, ip string) *rawClient {
	t.Helper()
	ctx := testCtx(t)
	d := &uacp.Dialer{Dialer: &net.Dialer{}}
	if ip != "" {
		d.Dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	conn, err := d.Dial(ctx, url)
	if err != nil {
		t.Fatalf("uacp.Dial: %v", err)
	}
	cfg := &uasc.Config{
		SecurityPolicyURI: ua.SecurityPolicyURINone,
		SecurityMode:      ua.MessageSecurityModeNone,
		Lifetime:          uint32(time.Hour / time.Millisecond),
		RequestTimeout:    5 * time.Second,
	}
	sc, err := uasc.NewSecureChannel(url, conn, cfg, make(chan error, 1))
	if err != nil {
		t.Fatalf("NewSecureChannel: %v", err)
	}
	if err := sc.Open(ctx); err != nil {
		t.Fatalf("Open: %v", err)
	}
	rc := &rawClient{t: t, conn: conn, sc: sc}
	t.Cleanup(rc.close)
	return rc
}

// startEngineServer starts a server over the real subscription engine
// reading src; the fake store answers the other services.
func startEngineServer(t testing.TB, src subscription.Source, cfg Config) (*Server, *subscription.Engine) {
	t.Helper()
	eng := subscription.New(src, subscription.Options{Logger: discardLogger()})
	t.Cleanup(eng.Close)
	cfg.ListenAddr, cfg.Logger = "127.0.0.1:0", discardLogger()
	srv, err := New(cfg, newFakeStore(), eng)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, eng
}

func (c *rawClient) close() {
	c.once.Do(func() {
		_ = c.sc.Close()
		_ = c.conn.Close()
	})
}

// do sends req with the client's authentication token and returns the
// response; err is the ServiceResult when it is Bad.
func (c *rawClient) do(req ua.Request) (ua.Response, error) {
	var resp ua.Response
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	err := c.sc.SendRequest(ctx, req, c.token, func(r ua.Response) error {
		resp = r
		return nil
	})
	return resp, err
}

// mustDo is do that fails the test on a Bad ServiceResult and checks that
// the response echoes the request's RequestHandle and carries a Timestamp.
func (c *rawClient) mustDo(req ua.Request) ua.Response {
	c.t.Helper()
	resp, err := c.do(req)
	if err != nil {
		c.t.Fatalf("%T: %v", req, err)
	}
	checkHeader(c.t, req, resp)
	return resp
}

// wantStatus sends req and fails unless the ServiceResult is want.
func (c *rawClient) wantStatus(req ua.Request, want ua.StatusCode) ua.Response {
	c.t.Helper()
	resp, err := c.do(req)
	if err != want {
		c.t.Fatalf("%T: got error %v, want %v", req, err, want)
	}
	if resp == nil {
		c.t.Fatalf("%T: no response", req)
	}
	checkHeader(c.t, req, resp)
	return resp
}

func checkHeader(t testing.TB, req ua.Request, resp ua.Response) {
	t.Helper()
	h := resp.Header()
	if h == nil {
		t.Fatalf("%T: response without header", resp)
	}
	if h.RequestHandle != req.Header().RequestHandle {
		t.Errorf("%T: RequestHandle %d, want %d", resp, h.RequestHandle, req.Header().RequestHandle)
	}
	if h.Timestamp.IsZero() {
		t.Errorf("%T: zero Timestamp", resp)
	}
}

func (c *rawClient) createSession(timeoutMS float64) *ua.CreateSessionResponse {
	c.t.Helper()
	resp := c.mustDo(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{
			ApplicationURI:  "urn:test:client",
			ApplicationName: ua.NewLocalizedText("test client"),
			ApplicationType: ua.ApplicationTypeClient,
		},
		EndpointURL:             "",
		SessionName:             c.t.Name(),
		ClientNonce:             make([]byte, 32),
		RequestedSessionTimeout: timeoutMS,
	}).(*ua.CreateSessionResponse)
	c.token = resp.AuthenticationToken
	return resp
}

func activateRequest(tok any) *ua.ActivateSessionRequest {
	return &ua.ActivateSessionRequest{
		ClientSignature:    &ua.SignatureData{},
		UserIdentityToken:  ua.NewExtensionObject(tok),
		UserTokenSignature: &ua.SignatureData{},
	}
}

func (c *rawClient) activate() {
	c.t.Helper()
	c.mustDo(activateRequest(&ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID}))
}

// session opens an activated session with the given timeout.
func (c *rawClient) session(timeoutMS float64) *ua.CreateSessionResponse {
	c.t.Helper()
	resp := c.createSession(timeoutMS)
	c.activate()
	return resp
}

func readReq(ids ...*ua.NodeID) *ua.ReadRequest {
	req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnBoth}
	for _, n := range ids {
		req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
	}
	return req
}

func contains(s, sub string) error {
	if !strings.Contains(s, sub) {
		return fmt.Errorf("%q not found", sub)
	}
	return nil
}
