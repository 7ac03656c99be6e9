package uaserver

import (
	"bytes"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/opcua/subscription"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestSessionExpiresOnFakeClock(t *testing.T) {
	fc := clockwork.NewFakeClock()
	ts := startServer(t, func(c *Config) { c.Clock = fc; c.MinSessionTimeout = time.Second })
	rc := dialRaw(t, ts.url)
	cs := rc.session(2000)
	if cs.RevisedSessionTimeout != 2000 {
		t.Fatalf("RevisedSessionTimeout %v, want 2000", cs.RevisedSessionTimeout)
	}
	sid := subscription.SessionID(cs.SessionID.String())
	ctx := testCtx(t)

	// Activity keeps the session alive: a request at 1.5 s moves the expiry
	// to 3.5 s; the timer that fires at 2 s re-arms itself.
	fc.Advance(1500 * time.Millisecond)
	rc.mustDo(readReq(nodeTemp))
	fc.Advance(1500 * time.Millisecond)
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("timer not re-armed: %v", err)
	}
	if n := ts.SessionCount(); n != 1 {
		t.Fatalf("SessionCount %d after activity, want 1", n)
	}
	if got := ts.engine.closedSessions(); len(got) != 0 {
		t.Fatalf("engine told %+v before expiry", got)
	}

	// No request for the timeout: the session ends and the engine is told.
	fc.Advance(time.Second)
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := ts.SessionCount(); n != 0 {
			return fmt.Errorf("SessionCount %d", n)
		}
		got := ts.engine.closedSessions()
		// A timed-out session keeps its subscriptions until their own
		// lifetime ends, so a client that comes back can transfer them.
		if len(got) != 1 || got[0] != (closedSession{sid, false}) {
			return fmt.Errorf("engine told %+v, want [{%s false}]", got, sid)
		}
		return nil
	})
	rc.wantStatus(readReq(nodeTemp), ua.StatusBadSessionIDInvalid)
	rc.wantStatus(activateRequest(&ua.AnonymousIdentityToken{PolicyID: "anonymous"}), ua.StatusBadSessionIDInvalid)
}

func TestSessionOutlivesItsChannel(t *testing.T) {
	ts := startServer(t, nil)
	a := dialRaw(t, ts.url)
	a.session(60000)
	token := a.token
	a.close()
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if n := len(ts.channels); n != 0 {
			return fmt.Errorf("%d channels open", n)
		}
		return nil
	})
	if n := ts.SessionCount(); n != 1 {
		t.Fatalf("SessionCount %d after channel close, want 1", n)
	}

	b := dialRaw(t, ts.url)
	b.token = token
	b.wantStatus(readReq(nodeTemp), ua.StatusBadSecureChannelIDInvalid)
	b.activate()
	b.mustDo(readReq(nodeTemp))
	if got := ts.engine.closedSessions(); len(got) != 0 {
		t.Fatalf("engine told %+v, want nothing", got)
	}
}

func TestSessionRules(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)

	rc.wantStatus(readReq(nodeTemp), ua.StatusBadSessionIDInvalid)
	rc.createSession(60000)
	rc.wantStatus(readReq(nodeTemp), ua.StatusBadSessionNotActivated)
	for _, tok := range []any{
		&ua.UserNameIdentityToken{PolicyID: "username", UserName: "op", Password: []byte("secret")},
		&ua.X509IdentityToken{PolicyID: "x509"},
		&ua.IssuedIdentityToken{PolicyID: "issued"},
	} {
		rc.wantStatus(activateRequest(tok), ua.StatusBadIdentityTokenInvalid)
	}
	rc.wantStatus(readReq(nodeTemp), ua.StatusBadSessionNotActivated)

	// Another channel may not make the first activation.
	other := dialRaw(t, ts.url)
	other.token = rc.token
	other.wantStatus(activateRequest(&ua.AnonymousIdentityToken{PolicyID: "anonymous"}), ua.StatusBadSecureChannelIDInvalid)

	rc.activate()
	rc.mustDo(readReq(nodeTemp))
	if r := rc.mustDo(&ua.CancelRequest{RequestHandle: 99}).(*ua.CancelResponse); r.CancelCount != 0 {
		t.Fatalf("CancelCount %d", r.CancelCount)
	}
	rc.mustDo(&ua.CloseSessionRequest{DeleteSubscriptions: false})
	if got := ts.engine.closedSessions(); len(got) != 1 || got[0].del {
		t.Fatalf("engine told %+v, want one close keeping subscriptions", got)
	}
	rc.wantStatus(readReq(nodeTemp), ua.StatusBadSessionIDInvalid)
	if n := ts.SessionCount(); n != 0 {
		t.Fatalf("SessionCount %d after CloseSession", n)
	}
}

func TestTooManySessions(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxSessions = 2 })
	a := dialRaw(t, ts.url)
	a.session(60000)
	b := dialRaw(t, ts.url)
	b.createSession(60000) // not activated: still counts
	c := dialRaw(t, ts.url)
	c.wantStatus(&ua.CreateSessionRequest{
		ClientDescription: &ua.ApplicationDescription{ApplicationName: ua.NewLocalizedText("c")},
		ClientNonce:       make([]byte, 32), RequestedSessionTimeout: 60000,
	}, ua.StatusBadTooManySessions)

	a.mustDo(&ua.CloseSessionRequest{DeleteSubscriptions: true})
	c.session(60000)
	c.mustDo(readReq(nodeTemp))
	if n := ts.SessionCount(); n != 2 {
		t.Fatalf("SessionCount %d, want 2", n)
	}
}

func TestBrowsePaging(t *testing.T) {
	ts := startServer(t, func(c *Config) { c.MaxContinuationPoints = 2 })
	rc := dialRaw(t, ts.url)
	rc.session(60000)

	browse := func(max uint32) *ua.BrowseResult {
		t.Helper()
		r := rc.mustDo(&ua.BrowseRequest{
			View:                          &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
			RequestedMaxReferencesPerNode: max,
			NodesToBrowse: []*ua.BrowseDescription{{
				NodeID: nodeObjects, BrowseDirection: ua.BrowseDirectionForward,
				ReferenceTypeID: ua.NewNumericNodeID(0, 33), IncludeSubtypes: true, ResultMask: 63,
			}},
		}).(*ua.BrowseResponse)
		return r.Results[0]
	}
	next := func(release bool, cps ...[]byte) []*ua.BrowseResult {
		t.Helper()
		return rc.mustDo(&ua.BrowseNextRequest{ReleaseContinuationPoints: release, ContinuationPoints: cps}).(*ua.BrowseNextResponse).Results
	}

	if r := browse(0); len(r.References) != objectsRefs || r.ContinuationPoint != nil {
		t.Fatalf("unlimited browse: %d refs, cp %x", len(r.References), r.ContinuationPoint)
	}

	// 25 references in pages of 10.
	var names []string
	r := browse(10)
	if r.StatusCode != ua.StatusOK || len(r.References) != 10 || len(r.ContinuationPoint) == 0 {
		t.Fatalf("page 1: %v, %d refs, cp %x", r.StatusCode, len(r.References), r.ContinuationPoint)
	}
	for _, ref := range r.References {
		names = append(names, ref.BrowseName.Name)
	}
	cp1 := r.ContinuationPoint
	r = next(false, cp1)[0]
	if len(r.References) != 10 || len(r.ContinuationPoint) == 0 {
		t.Fatalf("page 2: %d refs, cp %x", len(r.References), r.ContinuationPoint)
	}
	for _, ref := range r.References {
		names = append(names, ref.BrowseName.Name)
	}
	r = next(false, r.ContinuationPoint)[0]
	if len(r.References) != 5 || r.ContinuationPoint != nil {
		t.Fatalf("page 3: %d refs, cp %x", len(r.References), r.ContinuationPoint)
	}
	for _, ref := range r.References {
		names = append(names, ref.BrowseName.Name)
	}
	for i, n := range names {
		if want := fmt.Sprintf("Child%02d", i); n != want {
			t.Fatalf("reference %d is %s, want %s", i, n, want)
		}
	}
	// A spent or made-up continuation point is invalid.
	if got := next(false, cp1, []byte("bogus"))[1].StatusCode; got != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("bogus cp: %v", got)
	}
	if got := next(false, cp1)[0].StatusCode; got != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("spent cp: %v", got)
	}

	// Release.
	cp := browse(10).ContinuationPoint
	if got := next(true, cp)[0]; got.StatusCode != ua.StatusOK || len(got.References) != 0 {
		t.Fatalf("release: %v, %d refs", got.StatusCode, len(got.References))
	}
	if got := next(false, cp)[0].StatusCode; got != ua.StatusBadContinuationPointInvalid {
		t.Fatalf("released cp: %v", got)
	}

	// The session holds two points; a third drops the oldest.
	a, b, c := browse(5).ContinuationPoint, browse(5).ContinuationPoint, browse(5).ContinuationPoint
	res := next(false, a, b, c)
	if res[0].StatusCode != ua.StatusBadContinuationPointInvalid || res[1].StatusCode != ua.StatusOK || res[2].StatusCode != ua.StatusOK {
		t.Fatalf("after 3 points: %v %v %v, want oldest invalid", res[0].StatusCode, res[1].StatusCode, res[2].StatusCode)
	}
	if bytes.Equal(a, b) || bytes.Equal(b, c) {
		t.Fatal("continuation points are not unique")
	}

	rc.wantStatus(&ua.BrowseNextRequest{}, ua.StatusBadNothingToDo)
	rc.wantStatus(&ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewNumericNodeID(1, 5)},
		NodesToBrowse: []*ua.BrowseDescription{{NodeID: nodeObjects, ReferenceTypeID: ua.NewTwoByteNodeID(0)}}}, ua.StatusBadViewIDUnknown)
	unknown := rc.mustDo(&ua.BrowseRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)},
		NodesToBrowse: []*ua.BrowseDescription{{NodeID: nodeTemp, ReferenceTypeID: ua.NewTwoByteNodeID(0)}}}).(*ua.BrowseResponse)
	if unknown.Results[0].StatusCode != ua.StatusBadNodeIDUnknown {
		t.Fatalf("browse of unknown node: %v", unknown.Results[0].StatusCode)
	}
}

func TestOtherServices(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)
	rc.session(60000)

	call := rc.mustDo(&ua.CallRequest{MethodsToCall: []*ua.CallMethodRequest{
		{ObjectID: nodeObjects, MethodID: ua.NewStringNodeID(1, "Reset"), InputArguments: []*ua.Variant{}},
		{ObjectID: ua.NewStringNodeID(1, "Ghost"), MethodID: ua.NewStringNodeID(1, "Reset"), InputArguments: []*ua.Variant{}},
	}}).(*ua.CallResponse)
	if call.Results[0].StatusCode != ua.StatusBadMethodInvalid || call.Results[1].StatusCode != ua.StatusBadNodeIDUnknown {
		t.Fatalf("Call results %v, %v", call.Results[0].StatusCode, call.Results[1].StatusCode)
	}

	reg := rc.mustDo(&ua.RegisterNodesRequest{NodesToRegister: []*ua.NodeID{nodeTemp, nodeObjects}}).(*ua.RegisterNodesResponse)
	if len(reg.RegisteredNodeIDs) != 2 || !reg.RegisteredNodeIDs[0].Equal(nodeTemp) || !reg.RegisteredNodeIDs[1].Equal(nodeObjects) {
		t.Fatalf("RegisterNodes %v", reg.RegisteredNodeIDs)
	}
	rc.mustDo(&ua.UnregisterNodesRequest{NodesToUnregister: []*ua.NodeID{nodeTemp}})
	rc.wantStatus(&ua.RegisterNodesRequest{}, ua.StatusBadNothingToDo)

	tr := rc.mustDo(&ua.TranslateBrowsePathsToNodeIDsRequest{BrowsePaths: []*ua.BrowsePath{{
		StartingNode: nodeObjects,
		RelativePath: &ua.RelativePath{Elements: []*ua.RelativePathElement{{
			ReferenceTypeID: ua.NewTwoByteNodeID(0), TargetName: &ua.QualifiedName{NamespaceIndex: 1, Name: "Nope"},
		}}},
	}}}).(*ua.TranslateBrowsePathsToNodeIDsResponse)
	if tr.Results[0].StatusCode != ua.StatusBadNoMatch {
		t.Fatalf("Translate: %v", tr.Results[0].StatusCode)
	}

	w := rc.mustDo(&ua.WriteRequest{NodesToWrite: []*ua.WriteValue{
		{NodeID: nodeTemp, AttributeID: ua.AttributeIDValue, Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant("text")}},
	}}).(*ua.WriteResponse)
	if w.Results[0] != ua.StatusBadTypeMismatch {
		t.Fatalf("Write of a string: %v", w.Results[0])
	}
	rc.wantStatus(&ua.WriteRequest{}, ua.StatusBadNothingToDo)

	for _, req := range []ua.Request{
		&ua.QueryFirstRequest{View: &ua.ViewDescription{ViewID: ua.NewTwoByteNodeID(0)}, Filter: &ua.ContentFilter{}, NodeTypes: []*ua.NodeTypeDescription{}},
		&ua.AddNodesRequest{NodesToAdd: []*ua.AddNodesItem{}},
		&ua.FindServersOnNetworkRequest{},
	} {
		rc.wantStatus(req, ua.StatusBadServiceUnsupported)
	}

	// Subscription services reach the engine; an engine error is a status,
	// and an engine that answers nothing still gets the client an answer.
	cs := rc.mustDo(&ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100}).(*ua.CreateSubscriptionResponse)
	if cs.SubscriptionID != 7 {
		t.Fatalf("CreateSubscription id %d", cs.SubscriptionID)
	}
	rc.wantStatus(&ua.DeleteMonitoredItemsRequest{SubscriptionID: 999, MonitoredItemIDs: []uint32{1}}, ua.StatusBadInternalError)
	rc.wantStatus(&ua.ModifySubscriptionRequest{SubscriptionID: 999}, ua.StatusBadSubscriptionIDInvalid)
	rc.mustDo(readReq(nodeTemp))
}

func TestPublishIsAnsweredLaterWithoutBlockingTheChannel(t *testing.T) {
	ts := startServer(t, nil)
	rc := dialRaw(t, ts.url)
	cs := rc.session(60000)

	type result struct {
		resp ua.Response
		err  error
	}
	pubReq := &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}}
	done := make(chan result, 1)
	go func() {
		resp, err := rc.do(pubReq)
		done <- result{resp, err}
	}()
	var p pendingPublish
	select {
	case p = <-ts.engine.publish:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish never reached the engine")
	}
	if p.sid != subscription.SessionID(cs.SessionID.String()) {
		t.Fatalf("Publish for session %q, want %q", p.sid, cs.SessionID.String())
	}

	// The channel goes on while the Publish is pending.
	rc.mustDo(readReq(nodeTemp))

	// The engine answers without setting the header; the server stamps it.
	if err := p.out.SendResponse(p.reqID, keepAlive()); err != nil {
		t.Fatalf("SendResponse: %v", err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish response not received")
	}
	if r.err != nil {
		t.Fatalf("Publish: %v", r.err)
	}
	pr := r.resp.(*ua.PublishResponse)
	if pr.SubscriptionID != 7 || pr.ResponseHeader.RequestHandle != p.handle || pr.ResponseHeader.Timestamp.IsZero() {
		t.Fatalf("Publish response: sub %d handle %d (want %d) ts %v", pr.SubscriptionID,
			pr.ResponseHeader.RequestHandle, p.handle, pr.ResponseHeader.Timestamp)
	}

	// Once the channel is gone the sender reports an error instead of hanging.
	go func() { _, _ = rc.do(pubReq) }()
	select {
	case p = <-ts.engine.publish:
	case <-time.After(5 * time.Second):
		t.Fatal("second Publish never reached the engine")
	}
	rc.close()
	poll.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if err := p.out.SendResponse(p.reqID, keepAlive()); err == nil {
			return fmt.Errorf("SendResponse on a closed channel succeeded")
		}
		return nil
	})
}

// keepAlive is a complete, encodable PublishResponse.
func keepAlive() *ua.PublishResponse {
	return &ua.PublishResponse{
		SubscriptionID: 7, AvailableSequenceNumbers: []uint32{},
		NotificationMessage: &ua.NotificationMessage{SequenceNumber: 1, NotificationData: []*ua.ExtensionObject{}},
		Results:             []ua.StatusCode{}, DiagnosticInfos: []*ua.DiagnosticInfo{},
	}
}
