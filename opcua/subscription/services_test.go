package subscription

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"

	ualimits "github.com/otopcua/otopcua/opcua/limits"
)

func TestCreateSubscriptionRevises(t *testing.T) {
	v := newEnv(t, Options{})
	resp, err := v.e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{
		RequestHeader:               hdr(77),
		RequestedPublishingInterval: 0,
		RequestedLifetimeCount:      2,
		RequestedMaxKeepAliveCount:  0,
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.RevisedPublishingInterval != 10 || resp.RevisedMaxKeepAliveCount != 10 || resp.RevisedLifetimeCount != 30 {
		t.Fatalf("revised %v ms, keep-alive %d, lifetime %d; want 10, 10, 30",
			resp.RevisedPublishingInterval, resp.RevisedMaxKeepAliveCount, resp.RevisedLifetimeCount)
	}
	if resp.ResponseHeader.RequestHandle != 77 || resp.ResponseHeader.Timestamp.IsZero() || resp.SubscriptionID == 0 {
		t.Fatalf("header %+v id %d", resp.ResponseHeader, resp.SubscriptionID)
	}
	mod, err := v.e.ModifySubscription(sessA, &ua.ModifySubscriptionRequest{
		SubscriptionID: resp.SubscriptionID, RequestedPublishingInterval: 250, RequestedMaxKeepAliveCount: 4, RequestedLifetimeCount: 100,
	})
	if err != nil || mod.RevisedPublishingInterval != 250 || mod.RevisedMaxKeepAliveCount != 4 || mod.RevisedLifetimeCount != 100 {
		t.Fatalf("ModifySubscription = %+v, %v", mod, err)
	}
}

func TestModifySubscriptionChangesInterval(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 100}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1})
	if _, err := v.e.ModifySubscription(sessA, &ua.ModifySubscriptionRequest{SubscriptionID: sub, RequestedPublishingInterval: 500, RequestedMaxKeepAliveCount: 100}); err != nil {
		t.Fatal(err)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(400 * time.Millisecond)
	if snd.len() != 0 {
		t.Fatal("published before the new interval")
	}
	v.advance(100 * time.Millisecond)
	if snd.len() != 1 {
		t.Fatal("did not publish at the new interval")
	}
}

func TestServicesRejectUnknownAndForeignIDs(t *testing.T) {
	v := newEnv(t, Options{})
	mine := v.createSub(sessA, subParams{}).SubscriptionID
	foreign := v.createSub(sessB, subParams{}).SubscriptionID
	item := v.createItems(sessA, mine, ua.TimestampsToReturnBoth, itemSpec{node: 1})[0].MonitoredItemID
	const unknown = 999999

	for _, sub := range []uint32{foreign, unknown} {
		calls := map[string]error{}
		_, calls["ModifySubscription"] = v.e.ModifySubscription(sessA, &ua.ModifySubscriptionRequest{SubscriptionID: sub})
		_, calls["CreateMonitoredItems"] = v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, ItemsToCreate: []*ua.MonitoredItemCreateRequest{itemSpec{node: 1}.request()}})
		_, calls["ModifyMonitoredItems"] = v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, ItemsToModify: []*ua.MonitoredItemModifyRequest{{MonitoredItemID: item, RequestedParameters: &ua.MonitoringParameters{}}}})
		_, calls["SetMonitoringMode"] = v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{item}})
		_, calls["SetTriggering"] = v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub, TriggeringItemID: item, LinksToAdd: []uint32{item}})
		_, calls["DeleteMonitoredItems"] = v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{item}})
		_, calls["Republish"] = v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 1})
		for name, err := range calls {
			if err != ua.StatusBadSubscriptionIDInvalid {
				t.Errorf("%s on subscription %d: %v, want BadSubscriptionIdInvalid", name, sub, err)
			}
		}
		sp, _ := v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{mine, sub}})
		ds, _ := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
		if !equalSlices(sp.Results, []ua.StatusCode{ua.StatusGood, ua.StatusBadSubscriptionIDInvalid}) || ds.Results[0] != ua.StatusBadSubscriptionIDInvalid {
			t.Errorf("per-subscription results: SetPublishingMode %v DeleteSubscriptions %v", sp.Results, ds.Results)
		}
	}
	// The foreign subscription survived the attempts.
	if r, _ := v.e.SetPublishingMode(sessB, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{foreign}}); r.Results[0] != ua.StatusGood {
		t.Fatalf("foreign subscription damaged: %v", r.Results[0])
	}

	// Unknown monitored items: per-item results.
	mm, err := v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: mine, ItemsToModify: []*ua.MonitoredItemModifyRequest{
		{MonitoredItemID: item, RequestedParameters: &ua.MonitoringParameters{QueueSize: 5}},
		{MonitoredItemID: unknown, RequestedParameters: &ua.MonitoringParameters{}},
	}})
	if err != nil || mm.Results[0].StatusCode != ua.StatusGood || mm.Results[0].RevisedQueueSize != 5 || mm.Results[1].StatusCode != ua.StatusBadMonitoredItemIDInvalid {
		t.Fatalf("ModifyMonitoredItems = %+v %+v, %v", mm.Results[0], mm.Results[1], err)
	}
	sm, err := v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: mine, MonitoringMode: ua.MonitoringModeSampling, MonitoredItemIDs: []uint32{unknown, item}})
	if err != nil || !equalSlices(sm.Results, []ua.StatusCode{ua.StatusBadMonitoredItemIDInvalid, ua.StatusGood}) {
		t.Fatalf("SetMonitoringMode = %v, %v", sm.Results, err)
	}
	if _, err := v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: mine, TriggeringItemID: unknown, LinksToAdd: []uint32{item}}); err != ua.StatusBadMonitoredItemIDInvalid {
		t.Fatalf("SetTriggering with unknown triggering item: %v", err)
	}
	st, err := v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: mine, TriggeringItemID: item, LinksToAdd: []uint32{unknown}, LinksToRemove: []uint32{unknown}})
	if err != nil || st.AddResults[0] != ua.StatusBadMonitoredItemIDInvalid || st.RemoveResults[0] != ua.StatusBadMonitoredItemIDInvalid {
		t.Fatalf("SetTriggering = %+v, %v", st, err)
	}
	dm, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: mine, MonitoredItemIDs: []uint32{item, item, unknown}})
	if err != nil || !equalSlices(dm.Results, []ua.StatusCode{ua.StatusGood, ua.StatusBadMonitoredItemIDInvalid, ua.StatusBadMonitoredItemIDInvalid}) {
		t.Fatalf("DeleteMonitoredItems = %v, %v", dm.Results, err)
	}
}

func TestEmptyRequestsAreNothingToDo(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	calls := map[string]error{}
	_, calls["SetPublishingMode"] = v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{})
	_, calls["DeleteSubscriptions"] = v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{})
	_, calls["CreateMonitoredItems"] = v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub})
	_, calls["ModifyMonitoredItems"] = v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub})
	_, calls["SetMonitoringMode"] = v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub})
	_, calls["SetTriggering"] = v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub})
	_, calls["DeleteMonitoredItems"] = v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub})
	_, calls["TransferSubscriptions"] = v.e.TransferSubscriptions(sessA, &ua.TransferSubscriptionsRequest{})
	for name, err := range calls {
		if err != ua.StatusBadNothingToDo {
			t.Errorf("%s with an empty list: %v, want BadNothingToDo", name, err)
		}
	}
}

func TestCreateMonitoredItemsPerItemResults(t *testing.T) {
	v := newEnv(t, Options{MaxQueueSize: 50})
	sub := v.createSub(sessA, subParams{interval: 200}).SubscriptionID
	if _, err := v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: 4,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{itemSpec{node: 1}.request()}}); err != ua.StatusBadTimestampsToReturnInvalid {
		t.Fatalf("invalid TimestampsToReturn: %v", err)
	}
	v.src.set(3, "text")
	indexRange := itemSpec{node: 1}.request()
	indexRange.ItemToMonitor.IndexRange = "1:2"
	nilNode := itemSpec{node: 1}.request()
	nilNode.ItemToMonitor.NodeID = nil
	badMode := itemSpec{node: 1}.request()
	badMode.MonitoringMode = 7
	for _, tc := range []struct {
		name   string
		req    *ua.MonitoredItemCreateRequest
		want   ua.StatusCode
		interv float64
		queue  uint32
	}{
		{"good", itemSpec{node: 1, sampling: -1, queue: 10}.request(), ua.StatusGood, 200, 10},
		{"queue capped, fast sampling raised", itemSpec{node: 1, sampling: 1, queue: 1 << 20}.request(), ua.StatusGood, 10, 50},
		{"unknown node", itemSpec{node: 5000}.request(), ua.StatusBadNodeIDUnknown, 0, 0},
		{"unknown node, polled attribute", itemSpec{node: 5000, attr: ua.AttributeIDDisplayName}.request(), ua.StatusBadNodeIDUnknown, 0, 0},
		{"attribute the node lacks", itemSpec{node: 1, attr: ua.AttributeIDInverseName}.request(), ua.StatusBadAttributeIDInvalid, 0, 0},
		{"attribute out of range", itemSpec{node: 1, attr: 999}.request(), ua.StatusBadAttributeIDInvalid, 0, 0},
		{"polled attribute", itemSpec{node: 1, attr: ua.AttributeIDDisplayName, sampling: 0}.request(), ua.StatusGood, 200, 1},
		{"index range", indexRange, ua.StatusBadIndexRangeInvalid, 0, 0},
		{"nil node id", nilNode, ua.StatusBadNodeIDInvalid, 0, 0},
		{"bad mode", badMode, ua.StatusBadMonitoringModeInvalid, 0, 0},
		{"percent deadband", itemSpec{node: 1, filter: dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypePercent, 5)}.request(), ua.StatusBadMonitoredItemFilterUnsupported, 0, 0},
		{"absolute deadband", itemSpec{node: 1, filter: dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypeAbsolute, 5)}.request(), ua.StatusGood, 0, 1},
		{"deadband on a string", itemSpec{node: 3, filter: dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypeAbsolute, 5)}.request(), ua.StatusBadFilterNotAllowed, 0, 0},
		{"event filter on a Value", itemSpec{node: 1, filter: ua.NewExtensionObject(&ua.EventFilter{})}.request(), ua.StatusBadFilterNotAllowed, 0, 0},
		{"event item without an EventSource", itemSpec{node: 1, attr: ua.AttributeIDEventNotifier, filter: ua.NewExtensionObject(&ua.EventFilter{})}.request(), ua.StatusBadMonitoredItemFilterUnsupported, 0, 0},
		{"nil parameters", &ua.MonitoredItemCreateRequest{ItemToMonitor: &ua.ReadValueID{NodeID: nodeID(1), AttributeID: ua.AttributeIDValue}}, ua.StatusBadInvalidArgument, 0, 0},
		{"nil request", nil, ua.StatusBadInvalidArgument, 0, 0},
	} {
		watchers := v.src.watchers()
		resp, err := v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, ItemsToCreate: []*ua.MonitoredItemCreateRequest{tc.req}})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		r := resp.Results[0]
		if r.StatusCode != tc.want || r.RevisedSamplingInterval != tc.interv || r.RevisedQueueSize != tc.queue {
			t.Errorf("%s: status %v sampling %v queue %d; want %v %v %d", tc.name, r.StatusCode, r.RevisedSamplingInterval, r.RevisedQueueSize, tc.want, tc.interv, tc.queue)
		}
		if (r.MonitoredItemID != 0) != (tc.want == ua.StatusGood) {
			t.Errorf("%s: id %d with status %v", tc.name, r.MonitoredItemID, r.StatusCode)
		}
		if tc.want != ua.StatusGood && v.src.watchers() != watchers {
			t.Errorf("%s: a failed item left a Source registration behind", tc.name)
		}
	}
}

func TestMonitoredItemLimit(t *testing.T) {
	v := newEnv(t, Options{Limits: ualimits.Limits{MaxMonitoredItemsPerSubscription: 2, MaxSubscriptionsPerSession: 1}})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2}, itemSpec{node: 3})
	if res[0].StatusCode != ua.StatusGood || res[1].StatusCode != ua.StatusGood || res[2].StatusCode != ua.StatusBadTooManyMonitoredItems {
		t.Fatalf("results %v %v %v", res[0].StatusCode, res[1].StatusCode, res[2].StatusCode)
	}
	if _, err := v.e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{}); err != ua.StatusBadTooManySubscriptions {
		t.Fatalf("second subscription: %v, want BadTooManySubscriptions", err)
	}
}

func TestIDsNotReusedAfterDelete(t *testing.T) {
	v := newEnv(t, Options{})
	seenSubs, seenItems := map[uint32]bool{}, map[uint32]bool{}
	for range 50 {
		sub := v.createSub(sessA, subParams{}).SubscriptionID
		if seenSubs[sub] {
			t.Fatalf("subscription id %d reused", sub)
		}
		seenSubs[sub] = true
		for _, r := range v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2}) {
			if seenItems[r.MonitoredItemID] {
				t.Fatalf("item id %d reused", r.MonitoredItemID)
			}
			seenItems[r.MonitoredItemID] = true
			if _, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{r.MonitoredItemID}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestIDCounterSkipsIDsInUseAfterWrap(t *testing.T) {
	v := newEnv(t, Options{})
	first := v.createSub(sessA, subParams{}).SubscriptionID
	v.e.mu.Lock()
	v.e.nextSubID = first // as if the counter had wrapped around
	v.e.mu.Unlock()
	second := v.createSub(sessA, subParams{}).SubscriptionID
	if second == first {
		t.Fatalf("id %d handed out twice", first)
	}
}

func TestDeleteMonitoredItemsStopsWatching(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1}, itemSpec{node: 2})
	if v.src.watchers() != 2 {
		t.Fatalf("%d watchers, want 2", v.src.watchers())
	}
	if _, err := v.e.DeleteMonitoredItems(sessA, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{res[0].MonitoredItemID}}); err != nil {
		t.Fatal(err)
	}
	if v.src.watchers() != 1 {
		t.Fatalf("%d watchers after delete, want 1", v.src.watchers())
	}
	v.src.set(1, int32(9))
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	for _, n := range notifications(t, snd.all()[0].resp) {
		if n.ClientHandle == 1001 {
			t.Fatal("deleted item reported")
		}
	}
}

func TestMonitoringModes(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 100}).SubscriptionID
	id := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1, queue: 10})[0].MonitoredItemID
	snd := &fakeSender{}
	setMode := func(m ua.MonitoringMode) {
		t.Helper()
		r, err := v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoringMode: m, MonitoredItemIDs: []uint32{id}})
		if err != nil || r.Results[0] != ua.StatusGood {
			t.Fatalf("SetMonitoringMode(%v): %v %v", m, r, err)
		}
	}
	cycle := func() []int32 {
		t.Helper()
		n := snd.len()
		v.publish(sessA, snd, uint32(n+1))
		v.advance(100 * time.Millisecond)
		got := snd.all()
		if len(got) == n {
			return nil
		}
		return values(t, notifications(t, got[n].resp))
	}
	if got := cycle(); !equalSlices(got, []int32{0}) {
		t.Fatalf("initial value %v", got)
	}
	setMode(ua.MonitoringModeSampling)
	v.src.set(1, int32(1))
	v.src.set(1, int32(2))
	if got := cycle(); len(got) != 0 {
		t.Fatalf("sampling item reported %v", got)
	}
	setMode(ua.MonitoringModeReporting)
	if got := cycle(); !equalSlices(got, []int32{1, 2}) {
		t.Fatalf("values sampled while Sampling, reported after Reporting: %v, want [1 2]", got)
	}
	v.src.set(1, int32(3))
	setMode(ua.MonitoringModeDisabled)
	v.src.set(1, int32(4))
	if got := cycle(); len(got) != 0 {
		t.Fatalf("disabled item reported %v (queue not cleared?)", got)
	}
	v.src.set(1, int32(5))
	setMode(ua.MonitoringModeReporting)
	if got := cycle(); !equalSlices(got, []int32{5}) {
		t.Fatalf("re-enabled item: %v, want the current value [5]", got)
	}
	if _, err := v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoringMode: 9, MonitoredItemIDs: []uint32{id}}); err != ua.StatusBadMonitoringModeInvalid {
		t.Fatalf("invalid mode: %v", err)
	}
}

func TestSetTriggering(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 100}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnBoth,
		itemSpec{node: 1},
		itemSpec{node: 2, mode: ua.MonitoringModeSampling, queue: 5})
	trig, linked := res[0].MonitoredItemID, res[1].MonitoredItemID
	r, err := v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub, TriggeringItemID: trig, LinksToAdd: []uint32{linked}})
	if err != nil || r.AddResults[0] != ua.StatusGood {
		t.Fatalf("SetTriggering: %+v %v", r, err)
	}
	snd := &fakeSender{}
	handles := func() map[uint32][]int32 {
		n := snd.len()
		v.publish(sessA, snd, uint32(n+1))
		v.advance(100 * time.Millisecond)
		out := map[uint32][]int32{}
		got := snd.all()
		if len(got) == n {
			return out
		}
		for _, x := range notifications(t, got[n].resp) {
			out[x.ClientHandle] = append(out[x.ClientHandle], values(t, []*ua.MonitoredItemNotification{x})...)
		}
		return out
	}
	// Initial values: the trigger reports and takes the linked item's along.
	if got := handles(); len(got[1001]) != 1 || !equalSlices(got[1002], []int32{0}) {
		t.Fatalf("initial: %v", got)
	}
	v.src.set(2, int32(7))
	if got := handles(); len(got) != 0 {
		t.Fatalf("linked item reported without its trigger: %v", got)
	}
	v.src.set(2, int32(8))
	v.src.set(1, int32(1))
	if got := handles(); !equalSlices(got[1001], []int32{1}) || !equalSlices(got[1002], []int32{7, 8}) {
		t.Fatalf("triggered: %v, want trigger [1] and linked [7 8]", got)
	}
	r, err = v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub, TriggeringItemID: trig, LinksToRemove: []uint32{linked}})
	if err != nil || r.RemoveResults[0] != ua.StatusGood {
		t.Fatalf("remove link: %+v %v", r, err)
	}
	v.src.set(2, int32(9))
	v.src.set(1, int32(2))
	if got := handles(); len(got[1002]) != 0 {
		t.Fatalf("removed link still triggers: %v", got)
	}
}

func TestModifyMonitoredItemsShrinksQueue(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	id := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1, queue: 10, discardOldest: true})[0].MonitoredItemID
	for i := int32(1); i <= 5; i++ {
		v.src.set(1, i)
	}
	r, err := v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnNeither,
		ItemsToModify: []*ua.MonitoredItemModifyRequest{{MonitoredItemID: id, RequestedParameters: &ua.MonitoringParameters{ClientHandle: 55, QueueSize: 2, DiscardOldest: true, SamplingInterval: 20}}}})
	if err != nil || r.Results[0].RevisedQueueSize != 2 || r.Results[0].RevisedSamplingInterval != 20 {
		t.Fatalf("ModifyMonitoredItems: %+v %v", r.Results[0], err)
	}
	if _, err := v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, TimestampsToReturn: 9,
		ItemsToModify: []*ua.MonitoredItemModifyRequest{{MonitoredItemID: id}}}); err != ua.StatusBadTimestampsToReturnInvalid {
		t.Fatalf("invalid TimestampsToReturn: %v", err)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	ns := notifications(t, snd.all()[0].resp)
	if got := values(t, ns); !equalSlices(got, []int32{4, 5}) {
		t.Fatalf("values %v, want the newest two", got)
	}
	if ns[0].ClientHandle != 55 || ns[0].Value.Status != overflowBits || !ns[0].Value.SourceTimestamp.IsZero() {
		t.Fatalf("first notification %+v: want handle 55, overflow bit, no timestamps", ns[0])
	}
}

func TestAbsoluteDeadband(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1, queue: 10, filter: dcf(ua.DataChangeTriggerStatusValue, ua.DeadbandTypeAbsolute, 5)})
	for _, x := range []int32{3, 5, 6, 8, 11, 12, 2} {
		v.src.set(1, x)
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	if got := values(t, notifications(t, snd.all()[0].resp)); !equalSlices(got, []int32{0, 6, 12, 2}) {
		t.Fatalf("values %v, want [0 6 12 2]", got)
	}
}

func TestPolledAttribute(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 100}).SubscriptionID
	res := v.createItems(sessA, sub, ua.TimestampsToReturnNeither, itemSpec{node: 1, attr: ua.AttributeIDDisplayName, sampling: 200, queue: 5})
	if res[0].StatusCode != ua.StatusGood || res[0].RevisedSamplingInterval != 200 {
		t.Fatalf("create: %+v", res[0])
	}
	if v.src.watchers() != 0 {
		t.Fatal("a non-Value attribute was watched")
	}
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	if ns := notifications(t, snd.all()[0].resp); len(ns) != 1 || ns[0].Value.Value.Value() != "node1" {
		t.Fatalf("initial DisplayName: %+v", ns)
	}
	v.src.rename(1, "pump")
	reads := v.src.reads.Load()
	v.publish(sessA, snd, 2)
	v.advance(100 * time.Millisecond)
	v.advance(100 * time.Millisecond)
	got := snd.all()
	if len(got) != 2 || notifications(t, got[1].resp)[0].Value.Value.Value() != "pump" {
		t.Fatalf("renamed DisplayName not sampled: %d responses", len(got))
	}
	if n := v.src.reads.Load() - reads; n != 1 {
		t.Fatalf("%d reads in 200ms at a 200ms sampling interval, want 1", n)
	}
}

func TestResponsesEncode(t *testing.T) {
	v := newEnv(t, Options{})
	var resps []ua.Response
	add := func(r ua.Response, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resps = append(resps, r)
	}
	cs, err := v.e.CreateSubscription(sessA, &ua.CreateSubscriptionRequest{RequestedPublishingInterval: 100, PublishingEnabled: true})
	add(cs, err)
	sub := cs.SubscriptionID
	add(v.e.ModifySubscription(sessA, &ua.ModifySubscriptionRequest{SubscriptionID: sub}))
	cm, err := v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub, ItemsToCreate: []*ua.MonitoredItemCreateRequest{itemSpec{node: 1}.request(), itemSpec{node: 9999}.request()}})
	add(cm, err)
	id := cm.Results[0].MonitoredItemID
	add(v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, ItemsToModify: []*ua.MonitoredItemModifyRequest{{MonitoredItemID: id, RequestedParameters: &ua.MonitoringParameters{}}}}))
	add(v.e.SetMonitoringMode(sessA, &ua.SetMonitoringModeRequest{SubscriptionID: sub, MonitoringMode: ua.MonitoringModeReporting, MonitoredItemIDs: []uint32{id}}))
	add(v.e.SetTriggering(sessA, &ua.SetTriggeringRequest{SubscriptionID: sub, TriggeringItemID: id, LinksToAdd: []uint32{id}}))
	add(v.e.SetPublishingMode(sessA, &ua.SetPublishingModeRequest{SubscriptionIDs: []uint32{sub}, PublishingEnabled: true}))
	snd := &fakeSender{}
	v.publish(sessA, snd, 1)
	v.advance(100 * time.Millisecond)
	v.publish(sessA, snd, 2)
	v.advance(time.Second)
	add(v.e.Republish(sessA, &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 1}))
	add(v.e.TransferSubscriptions(sessB, &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}))
	v.settle()
	add(v.e.DeleteMonitoredItems(sessB, &ua.DeleteMonitoredItemsRequest{SubscriptionID: sub, MonitoredItemIDs: []uint32{id}}))
	add(v.e.DeleteSubscriptions(sessB, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}))
	v.publish(sessB, snd, 3)
	v.settle()
	for _, s := range snd.all() {
		resps = append(resps, s.resp)
	}
	if len(resps) < 14 {
		t.Fatalf("only %d responses collected", len(resps))
	}
	for _, r := range resps {
		if _, err := ua.Encode(r); err != nil {
			t.Errorf("%T does not encode: %v", r, err)
		}
	}
}

// TestCreateMonitoredItemsRacingDelete deletes the subscription while
// CreateMonitoredItems is registering with the Source: the Source is called
// without engine locks (the delete goes through at once), and the
// registrations made for the dead subscription are cancelled.
func TestCreateMonitoredItemsRacingDelete(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{}).SubscriptionID
	var once bool
	v.src.beforeWatch = func() {
		if once {
			return
		}
		once = true
		done := make(chan error, 1)
		go func() {
			_, err := v.e.DeleteSubscriptions(sessA, &ua.DeleteSubscriptionsRequest{SubscriptionIDs: []uint32{sub}})
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(5 * time.Second):
			t.Error("DeleteSubscriptions blocked while CreateMonitoredItems called the Source")
		}
	}
	_, err := v.e.CreateMonitoredItems(sessA, &ua.CreateMonitoredItemsRequest{SubscriptionID: sub,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{itemSpec{node: 1}.request(), itemSpec{node: 2}.request()}})
	if err != ua.StatusBadSubscriptionIDInvalid {
		t.Fatalf("CreateMonitoredItems on a subscription deleted meanwhile: %v", err)
	}
	if n := v.src.watchers(); n != 0 {
		t.Fatalf("%d Source registrations left behind", n)
	}
}

func TestSamplingIntervalChangesBackAndForth(t *testing.T) {
	v := newEnv(t, Options{})
	sub := v.createSub(sessA, subParams{interval: 100, keepAlive: 100}).SubscriptionID
	id := v.createItems(sessA, sub, ua.TimestampsToReturnBoth, itemSpec{node: 1, sampling: 50, queue: 10})[0].MonitoredItemID
	modify := func(ms float64) {
		t.Helper()
		if _, err := v.e.ModifyMonitoredItems(sessA, &ua.ModifyMonitoredItemsRequest{SubscriptionID: sub, ItemsToModify: []*ua.MonitoredItemModifyRequest{
			{MonitoredItemID: id, RequestedParameters: &ua.MonitoringParameters{ClientHandle: 1001, SamplingInterval: ms, QueueSize: 10}}}}); err != nil {
			t.Fatal(err)
		}
	}
	snd := &fakeSender{}
	cycle := func() []int32 {
		t.Helper()
		n := snd.len()
		v.publish(sessA, snd, uint32(n+1))
		v.advance(100 * time.Millisecond)
		if snd.len() == n {
			return nil
		}
		return values(t, notifications(t, snd.all()[n].resp))
	}
	cycle()
	v.src.set(1, int32(1)) // waits for a sampling tick
	modify(0)              // exception based: the pending change is queued now
	v.src.set(1, int32(2))
	if got := cycle(); !equalSlices(got, []int32{1, 2}) {
		t.Fatalf("after switching to exception based: %v, want [1 2]", got)
	}
	modify(50)
	v.src.set(1, int32(3))
	v.src.set(1, int32(4))
	if got := cycle(); !equalSlices(got, []int32{4}) {
		t.Fatalf("after switching back to 50ms sampling: %v, want [4]", got)
	}
}
