package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua"
	"github.com/otopcua/otopcua/opcua/addrspace"
	"github.com/otopcua/otopcua/opcua/mirror"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// memNet connects Members in memory; a member cut off sends and receives
// nothing (its process died).
type memNet struct {
	mu      sync.Mutex
	members map[string]*mirror.Member
	cut     map[string]bool
}

type memTransport struct {
	net  *memNet
	self string
}

func (t memTransport) Send(to string, b []byte) error {
	t.net.mu.Lock()
	m, dead := t.net.members[to], t.net.cut[t.self] || t.net.cut[to]
	t.net.mu.Unlock()
	if m == nil || dead {
		return errors.New("unreachable")
	}
	m.Receive(t.self, bytes.Clone(b))
	return nil
}

func (n *memNet) kill(name string) {
	n.mu.Lock()
	n.cut[name] = true
	n.mu.Unlock()
}

// node is one member of the test's redundant pair.
type node struct {
	name    string
	member  *mirror.Member
	srv     *opcua.Server
	counter *addrspace.Variable
}

func startNode(t *testing.T, n *memNet, name string, opts mirror.Options) *node {
	t.Helper()
	opts.Self = name
	opts.Transport = memTransport{net: n, self: name}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	m := mirror.New(opts)
	n.mu.Lock()
	n.members[name] = m
	n.mu.Unlock()
	srv, err := opcua.New(opcua.Config{
		ListenHost:     "127.0.0.1",
		PublicHostname: "127.0.0.1",
		Port:           opcua.AnyPort,
		ApplicationURI: "urn:test:" + name,
		Clock:          clockwork.NewRealClock(),
		Logger:         opts.Logger,
		Mirror:         m,
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := srv.AddressSpace().AddVariable(ua.NewStringNodeID(1, "counter"), "counter", "counter",
		ua.NewNumericNodeID(0, id.ObjectsFolder), ua.NewNumericNodeID(0, id.Int32), int32(0), byte(ua.AccessLevelTypeCurrentRead))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	nd := &node{name: name, member: m, srv: srv, counter: v}
	t.Cleanup(func() {
		_ = srv.Close()
		m.Close()
	})
	return nd
}

// device counts every tick and shows each value to both nodes, each with
// its own SourceTimestamp, as two nodes polling one field device do.
func device(t *testing.T, every time.Duration, nodes ...*node) (stop func() int32) {
	var last atomic.Int32
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tk := time.NewTicker(every)
		defer tk.Stop()
		for v := int32(1); ; v++ {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			for k, nd := range nodes {
				_ = nd.counter.Set(v, ua.StatusOK, time.Now().Add(time.Duration(k)*3*time.Millisecond))
			}
			last.Store(v)
		}
	}()
	return func() int32 {
		close(done)
		wg.Wait()
		return last.Load()
	}
}

// received is what the test's client application got, in order.
type received struct {
	mu     sync.Mutex
	values []int32
	seqs   map[uint32]bool
	last   uint32
}

func (r *received) take(t *testing.T, msg *ua.NotificationMessage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(msg.NotificationData) == 0 {
		return
	}
	if r.seqs[msg.SequenceNumber] {
		t.Errorf("sequence number %d delivered twice", msg.SequenceNumber)
		return
	}
	r.seqs[msg.SequenceNumber] = true
	r.last = max(r.last, msg.SequenceNumber)
	for _, eo := range msg.NotificationData {
		dc, ok := eo.Value.(*ua.DataChangeNotification)
		if !ok {
			continue
		}
		for _, n := range dc.MonitoredItems {
			if v, ok := n.Value.Value.Value().(int32); ok {
				r.values = append(r.values, v)
			}
		}
	}
}

func (r *received) snapshot() []int32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int32(nil), r.values...)
}

// publishUntil sends Publish requests on ch for session auth until stop
// closes or the channel fails, acknowledging what it got.
func publishUntil(t *testing.T, ch *uaclient.Channel, auth *ua.NodeID, sub uint32, r *received, stop <-chan struct{}) error {
	var acks []*ua.SubscriptionAcknowledgement
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		resp, err := ch.Call(context.Background(), &ua.PublishRequest{SubscriptionAcknowledgements: acks}, auth, 5*time.Second)
		if err != nil {
			return err
		}
		pr := resp.(*ua.PublishResponse)
		acks = nil
		if pr.NotificationMessage != nil && len(pr.NotificationMessage.NotificationData) > 0 {
			r.take(t, pr.NotificationMessage)
			acks = append(acks, &ua.SubscriptionAcknowledgement{SubscriptionID: sub, SequenceNumber: pr.NotificationMessage.SequenceNumber})
		}
	}
}

func dial(t *testing.T, srv *opcua.Server) *uaclient.Channel {
	t.Helper()
	ch, err := uaclient.Dial(context.Background(), srv.EndpointURL(), uaclient.Options{DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ch.Close() })
	return ch
}

func checkFor(t *testing.T, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTakeoverDeliversEveryValueOnce is the HotAndMirrored promise in one
// process: a client subscribed on a, a dies, the client activates its
// session on b with the same token, republishes what it missed and goes
// on; every counter value arrives once, in order.
func TestTakeoverDeliversEveryValueOnce(t *testing.T) {
	for _, tc := range []struct{ sync, publishFirst bool }{{true, false}, {false, false}, {true, true}} {
		sync := tc.sync
		t.Run(fmt.Sprintf("sync=%v,publish-first=%v", tc.sync, tc.publishFirst), func(t *testing.T) {
			n := &memNet{members: map[string]*mirror.Member{}, cut: map[string]bool{}}
			opts := mirror.Options{Sync: sync, MatchWindow: 50 * time.Millisecond}
			a, b := startNode(t, n, "a", opts), startNode(t, n, "b", opts)
			a.member.SetPeers([]string{"b"})
			b.member.SetPeers([]string{"a"})
			stopDevice := device(t, 20*time.Millisecond, a, b)

			ch := dial(t, a.srv)
			sess, err := uaclient.OpenSession(context.Background(), ch, uaclient.SessionParams{Name: "hmi", Timeout: time.Minute, CallTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			sub := subscribeCounter(t, sess)
			checkFor(t, 5*time.Second, func() error {
				st := b.member.Stats()
				if o := st.Origins["a"]; !o.Ready || o.Sessions != 1 {
					return fmt.Errorf("b holds %+v of a", st.Origins)
				}
				if p := a.member.Stats().Peers["b"]; !p.Ready {
					return fmt.Errorf("a sees b %+v", p)
				}
				return nil
			})

			r := &received{seqs: map[uint32]bool{}}
			stop := make(chan struct{})
			done := make(chan error, 1)
			go func() { done <- publishUntil(t, ch, sess.Auth(), sub, r, stop) }()
			checkFor(t, 5*time.Second, func() error {
				if len(r.snapshot()) < 20 {
					return errors.New("too few values before the failover")
				}
				return nil
			})
			// a dies: nothing more leaves it, its clients lose the connection.
			n.kill("a")
			_ = a.srv.Close()
			<-done

			ch2 := dial(t, b.srv)
			_, err = ch2.Call(context.Background(), &ua.ActivateSessionRequest{
				ClientSignature:    &ua.SignatureData{},
				LocaleIDs:          []string{},
				UserIdentityToken:  ua.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyID: "Anonymous"}),
				UserTokenSignature: &ua.SignatureData{},
			}, sess.Auth(), 5*time.Second)
			if err != nil {
				t.Fatalf("ActivateSession on b with a's token: %v", err)
			}
			r.mu.Lock()
			next := r.last + 1
			r.mu.Unlock()
			stop2 := make(chan struct{})
			done2 := make(chan error, 1)
			if tc.publishFirst {
				// node-opcua's Publish requests go out with its Republish
				// requests after a reconnection. Here one Publish goes
				// first and has 300 ms to be answered before the
				// Republish: the first new message must not come twice
				// (once per service); b holds it until the client caught
				// up.
				first := make(chan struct{})
				go func() {
					defer close(first)
					resp, err := ch2.Call(context.Background(), &ua.PublishRequest{SubscriptionAcknowledgements: []*ua.SubscriptionAcknowledgement{}}, sess.Auth(), 5*time.Second)
					if err == nil {
						r.take(t, resp.(*ua.PublishResponse).NotificationMessage)
					}
				}()
				select {
				case <-first:
				case <-time.After(300 * time.Millisecond):
				}
				defer func() { <-first }()
			}
			for {
				resp, err := ch2.Call(context.Background(), &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: next}, sess.Auth(), 5*time.Second)
				if errors.Is(err, ua.StatusBadMessageNotAvailable) {
					break
				}
				if err != nil {
					t.Fatalf("Republish %d: %v", next, err)
				}
				r.take(t, resp.(*ua.RepublishResponse).NotificationMessage)
				next++
			}
			go func() { done2 <- publishUntil(t, ch2, sess.Auth(), sub, r, stop2) }()
			before := len(r.snapshot())
			checkFor(t, 5*time.Second, func() error {
				if len(r.snapshot()) < before+20 {
					return errors.New("too few values after the failover")
				}
				return nil
			})
			close(stop2)
			stopDevice()
			<-done2

			got := r.snapshot()
			seen := map[int32]bool{}
			for _, v := range got {
				if seen[v] {
					t.Errorf("value %d delivered twice", v)
				}
				seen[v] = true
			}
			sorted := append([]int32(nil), got...)
			sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
			for i := 1; i < len(sorted); i++ {
				if sorted[i] != sorted[i-1]+1 && sorted[i] != sorted[i-1] {
					t.Errorf("values %d..%d missing", sorted[i-1]+1, sorted[i]-1)
				}
			}
			if st := b.member.Stats(); st.Takeovers["ok"] != 1 {
				t.Errorf("takeovers %v", st.Takeovers)
			}
			t.Logf("%d values, %d..%d", len(got), sorted[0], sorted[len(sorted)-1])
		})
	}
}

// TestTransferFromTheMirror: a client that does not activate its session
// on the survivor (a warm client) makes a new session there and transfers
// its subscription: the mirror has it, with the values it was owed, and it
// is served there from then on; every counter value arrives once.
func TestTransferFromTheMirror(t *testing.T) {
	n := &memNet{members: map[string]*mirror.Member{}, cut: map[string]bool{}}
	opts := mirror.Options{Sync: true, MatchWindow: 50 * time.Millisecond}
	a, b := startNode(t, n, "a", opts), startNode(t, n, "b", opts)
	a.member.SetPeers([]string{"b"})
	b.member.SetPeers([]string{"a"})
	stopDevice := device(t, 20*time.Millisecond, a, b)
	defer stopDevice()

	ch := dial(t, a.srv)
	sess, err := uaclient.OpenSession(context.Background(), ch, uaclient.SessionParams{Name: "hmi", Timeout: time.Minute, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sub := subscribeCounter(t, sess)
	checkFor(t, 5*time.Second, func() error {
		if o := b.member.Stats().Origins["a"]; !o.Ready || o.Sessions != 1 {
			return fmt.Errorf("b holds %+v of a", o)
		}
		return nil
	})
	r := &received{seqs: map[uint32]bool{}}
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- publishUntil(t, ch, sess.Auth(), sub, r, stop) }()
	checkFor(t, 5*time.Second, func() error {
		if len(r.snapshot()) < 10 {
			return errors.New("too few values before the failover")
		}
		return nil
	})
	n.kill("a")
	_ = a.srv.Close()
	<-done

	ch2 := dial(t, b.srv)
	sess2, err := uaclient.OpenSession(context.Background(), ch2, uaclient.SessionParams{Name: "hmi-again", Timeout: time.Minute, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sess2.Call(context.Background(), &ua.TransferSubscriptionsRequest{SubscriptionIDs: []uint32{sub}}, 5*time.Second)
	if err != nil {
		t.Fatalf("TransferSubscriptions on b: %v", err)
	}
	res := tr.(*ua.TransferSubscriptionsResponse).Results[0]
	if res.StatusCode != ua.StatusOK {
		t.Fatalf("TransferSubscriptions on b: %v", res.StatusCode)
	}
	r.mu.Lock()
	last := r.last
	r.mu.Unlock()
	for _, seq := range res.AvailableSequenceNumbers {
		if seq <= last {
			continue
		}
		rp, err := sess2.Call(context.Background(), &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: seq}, 5*time.Second)
		if err != nil {
			t.Fatalf("Republish %d: %v", seq, err)
		}
		r.take(t, rp.(*ua.RepublishResponse).NotificationMessage)
	}
	// Caught up: a Republish after the last finds nothing.
	if _, err := sess2.Call(context.Background(), &ua.RepublishRequest{SubscriptionID: sub, RetransmitSequenceNumber: 0}, 5*time.Second); !errors.Is(err, ua.StatusBadMessageNotAvailable) {
		t.Fatalf("Republish 0: %v", err)
	}
	stop2 := make(chan struct{})
	done2 := make(chan error, 1)
	go func() { done2 <- publishUntil(t, ch2, sess2.Auth(), sub, r, stop2) }()
	before := len(r.snapshot())
	checkFor(t, 5*time.Second, func() error {
		if len(r.snapshot()) < before+10 {
			return errors.New("too few values after the transfer")
		}
		return nil
	})
	close(stop2)
	<-done2
	got := r.snapshot()
	seen := map[int32]bool{}
	lo, hi := got[0], got[0]
	for _, v := range got {
		if seen[v] {
			t.Errorf("value %d delivered twice", v)
		}
		seen[v] = true
		lo, hi = min(lo, v), max(hi, v)
	}
	for v := lo; v <= hi; v++ {
		if !seen[v] {
			t.Errorf("value %d missing", v)
		}
	}
}

// subscribeCounter makes a subscription of sess (publishing 50 ms) with one
// item on the counter (every change, queue 100) and returns its id.
func subscribeCounter(t *testing.T, sess *uaclient.Session) uint32 {
	t.Helper()
	resp, err := sess.Call(context.Background(), &ua.CreateSubscriptionRequest{
		RequestedPublishingInterval: 50, RequestedLifetimeCount: 600, RequestedMaxKeepAliveCount: 10, PublishingEnabled: true,
	}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	sub := resp.(*ua.CreateSubscriptionResponse).SubscriptionID
	if _, err = sess.Call(context.Background(), &ua.CreateMonitoredItemsRequest{
		SubscriptionID: sub, TimestampsToReturn: ua.TimestampsToReturnBoth,
		ItemsToCreate: []*ua.MonitoredItemCreateRequest{{
			ItemToMonitor:  &ua.ReadValueID{NodeID: ua.NewStringNodeID(1, "counter"), AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}},
			MonitoringMode: ua.MonitoringModeReporting,
			RequestedParameters: &ua.MonitoringParameters{ClientHandle: 7, SamplingInterval: 0, QueueSize: 100,
				DiscardOldest: true, Filter: ua.NewExtensionObject(nil)},
		}},
	}, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return sub
}
