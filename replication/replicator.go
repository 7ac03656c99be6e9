package replication

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/otopcua/otopcua/localdb"
	"github.com/otopcua/otopcua/localdb/hlc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Defaults of Options.
const (
	// DefaultInterval is the pause between two sync rounds with a peer.
	DefaultInterval = time.Second
	// DefaultBatch is the most changes asked for in one Pull.
	DefaultBatch = 500
	// MaxBackoff bounds the pause after failed rounds with a peer.
	MaxBackoff = 30 * time.Second
	// callTimeout bounds one Pull or Ack.
	callTimeout = 10 * time.Second
	// logEvery is how often a refusal of one peer is logged.
	logEvery = time.Minute
)

// Options configure a Replicator.
type Options struct {
	// NodeID names this node to its peers (status pages). Default: the
	// LocalDb's node id.
	NodeID string
	// Local is this node's LocalDb. Required.
	Local *localdb.DB
	// Listen is the address served, e.g. ":4850". Required.
	Listen string
	// Peers are the peers' addresses, host:port. Required.
	Peers []string
	// APIKey is the shared secret, at least 16 characters. Required.
	APIKey string
	// Clock times the rounds, back-off and status. Default: the real clock.
	Clock clockwork.Clock
	// Logger receives refusals (once per peer and reason per minute) and
	// peer up/down lines. Default: discard.
	Logger *slog.Logger
	// Interval is the pause between rounds with a peer. Default 1 s.
	Interval time.Duration
	// Batch is the most changes per Pull, 1..MaxBatchChanges. Default 500.
	Batch int
	// ServerCredentials secure the served port (Cluster:Tls, see package
	// clustertls); set both or neither. Default nil: clear text, with
	// the API key as the only check.
	ServerCredentials credentials.TransportCredentials
	// DialCredentials secure the connections to the peers. Default nil:
	// clear text.
	DialCredentials credentials.TransportCredentials
	// History is the process history served to the peers' back-fill
	// (HistoryPeers). Default nil: a peer's history request is refused
	// with codes.Unimplemented.
	History HistorySource
}

// Replicator serves this node's LocalDb to its peers and pulls theirs:
// each node pulls what it lacks from every peer. It is safe for concurrent
// use; see locksordering: one lock, mu.
type Replicator struct {
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	key     string                // mu must be held.
	peers   map[string]*peerState // by address; mu must be held for the fields.
	served  map[string]*servedState
	refused map[string]int64
	logged  map[string]time.Time
	started time.Time
	limits  serverLimits

	lis    net.Listener
	srv    *grpc.Server
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// peerState is what this node knows of pulling from one peer.
type peerState struct {
	addr      string
	conn      *grpc.ClientConn
	lastSync  time.Time // last round that left nothing to pull
	lastErr   string
	refused   int64
	received  map[string]int64
	applied   map[string]int64
	connected bool
}

// servedState is what this node served to one puller (by its node id).
type servedState struct {
	sent     map[string]int64
	acked    map[string]hlc.Stamp
	lastPull time.Time
}

// New checks opts and returns a stopped Replicator.
func New(opts Options) (*Replicator, error) {
	switch {
	case opts.Local == nil:
		return nil, errors.New("replication: Options.Local is required")
	case opts.Listen == "":
		return nil, errors.New("replication: Options.Listen is required (LocalDb:SyncListenPort)")
	case len(opts.Peers) == 0:
		return nil, errors.New("replication: Options.Peers is required (LocalDb:Peers)")
	case len(opts.APIKey) < 16:
		return nil, errors.New("replication: Options.APIKey must be at least 16 characters (LocalDb:Replication:ApiKey)")
	}
	if opts.NodeID == "" {
		opts.NodeID = opts.Local.NodeID()
	}
	if err := hlc.CheckNode(opts.NodeID); err != nil {
		return nil, fmt.Errorf("replication: node id: %w", err)
	}
	if opts.Clock == nil {
		opts.Clock = clockwork.NewRealClock()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Batch <= 0 {
		opts.Batch = DefaultBatch
	}
	opts.Batch = min(opts.Batch, MaxBatchChanges)
	r := &Replicator{opts: opts, log: opts.Logger.With("component", "localdb-replication"), key: opts.APIKey,
		peers: map[string]*peerState{}, served: map[string]*servedState{}, refused: map[string]int64{}, logged: map[string]time.Time{},
		limits: defaultServerLimits}
	for _, p := range opts.Peers {
		r.peers[p] = &peerState{addr: p, received: map[string]int64{}, applied: map[string]int64{}}
	}
	return r, nil
}

// SetAPIKey replaces the key, for serving and pulling, without a restart.
func (r *Replicator) SetAPIKey(key string) error {
	if len(key) < 16 {
		return errors.New("replication: the API key must be at least 16 characters")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.key = key
	return nil
}

func (r *Replicator) apiKey() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.key
}

// Start listens on Listen and starts one pull loop per peer. It returns
// once listening; a listen error is returned. Call Stop to end.
func (r *Replicator) Start(ctx context.Context) error {
	lis, err := net.Listen("tcp", r.opts.Listen)
	if err != nil {
		return fmt.Errorf("replication: listen on %s (LocalDb:SyncListenPort): %w", r.opts.Listen, err)
	}
	r.lis = lis
	r.srv = grpc.NewServer(r.serverOptions()...)
	r.srv.RegisterService(&serviceDesc, r)
	ctx, r.cancel = context.WithCancel(ctx)
	r.mu.Lock()
	r.started = r.opts.Clock.Now()
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		_ = r.srv.Serve(lis) // returns on Stop
	}()
	dialCreds := r.opts.DialCredentials
	if dialCreds == nil {
		dialCreds = insecure.NewCredentials()
	}
	for _, p := range r.peers {
		conn, err := grpc.Dial(p.addr, grpc.WithTransportCredentials(dialCreds),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(wireCodec{}), grpc.MaxCallRecvMsgSize(MaxMessageBytes+1024)))
		if err != nil {
			r.Stop()
			return fmt.Errorf("replication: peer %s (LocalDb:Peers): %w", p.addr, err)
		}
		p.conn = conn
		r.wg.Add(1)
		go r.runPeer(ctx, p)
	}
	r.log.Info("localdb replication started", "listen", lis.Addr().String(), "peers", r.opts.Peers, "node", r.opts.NodeID)
	return nil
}

// Addr is the address served (after Start).
func (r *Replicator) Addr() net.Addr { return r.lis.Addr() }

// Stop ends the pull loops and the server and waits for them.
func (r *Replicator) Stop() {
	if r.cancel != nil {
		r.cancel()
	}
	if r.srv != nil {
		r.srv.Stop()
	}
	r.wg.Wait()
	for _, p := range r.peers {
		if p.conn != nil {
			_ = p.conn.Close()
		}
	}
}

// runPeer pulls from one peer every Interval, backing off after failures.
func (r *Replicator) runPeer(ctx context.Context, p *peerState) {
	defer r.wg.Done()
	failures := 0
	for {
		wait := r.opts.Interval
		if err := r.syncPeer(ctx, p); err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			wait = backoff(r.opts.Interval, failures)
		} else {
			failures = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-r.opts.Clock.After(wait):
		}
	}
}

// backoff is the pause after n failed rounds in a row: interval doubled per
// failure, at most MaxBackoff.
func backoff(interval time.Duration, n int) time.Duration {
	d := interval
	for i := 0; i < n && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
}

// syncPeer pulls every table from p until it has nothing more.
func (r *Replicator) syncPeer(ctx context.Context, p *peerState) error {
	for _, table := range localdb.ReplicatedTables() {
		for {
			more, err := r.pullOnce(ctx, p, table)
			if err != nil {
				r.peerFailed(p, err)
				return err
			}
			if !more {
				break
			}
		}
	}
	r.mu.Lock()
	if !p.connected {
		r.log.Info("localdb replication: in sync with peer", "peer", p.addr)
	}
	p.connected, p.lastSync, p.lastErr = true, r.opts.Clock.Now(), ""
	r.mu.Unlock()
	return nil
}

// pullOnce pulls and applies one batch of table from p.
func (r *Replicator) pullOnce(ctx context.Context, p *peerState, table string) (more bool, err error) {
	cursor, err := r.opts.Local.Cursor(ctx, p.addr, table)
	if err != nil {
		return false, err
	}
	batch, err := r.call(ctx, p, &Pull{Node: r.opts.NodeID, Table: table, After: cursor, Limit: uint32(r.opts.Batch)})
	if err != nil {
		return false, err
	}
	for _, c := range batch.Changes {
		if c.Table != table {
			return false, fmt.Errorf("%w: peer sent a change of %s to a pull of %s", ErrMalformed, c.Table, table)
		}
	}
	if len(batch.Changes) == 0 {
		return false, nil
	}
	last := batch.Changes[len(batch.Changes)-1].Stamp
	applied, _, err := r.opts.Local.ApplyRemoteFrom(ctx, p.addr, table, batch.Changes, last)
	if err != nil {
		return false, err
	}
	r.mu.Lock()
	p.received[table] += int64(len(batch.Changes))
	p.applied[table] += int64(applied)
	r.mu.Unlock()
	r.sendAck(ctx, p, table, last)
	return batch.More, nil
}

// call sends one Pull with the key and a fresh nonce and checks the peer's
// proof before the batch is used.
func (r *Replicator) call(ctx context.Context, p *peerState, pull *Pull) (*Batch, error) {
	out := new(Batch)
	return out, r.invoke(ctx, p, pullMethod, pull, out)
}

// invoke calls method with the key and a fresh nonce, within callTimeout,
// and checks the peer's proof before out is used.
func (r *Replicator) invoke(ctx context.Context, p *peerState, method string, in, out any) error {
	key := r.apiKey()
	var n [16]byte
	_, _ = rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, keyHeader, key, nonceHeader, nonce), callTimeout)
	defer cancel()
	var header metadata.MD
	if err := p.conn.Invoke(ctx, method, in, out, grpc.Header(&header)); err != nil {
		return err
	}
	got := header.Get(proofHeader)
	if len(got) != 1 || !keysEqual(got[0], proof(key, nonce)) {
		return errBadProof
	}
	return nil
}

var errBadProof = errors.New("replication: the peer did not prove it holds this node's LocalDb:Replication:ApiKey")

func (r *Replicator) sendAck(ctx context.Context, p *peerState, table string, applied hlc.Stamp) {
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctx, keyHeader, r.apiKey()), callTimeout)
	defer cancel()
	_ = p.conn.Invoke(ctx, ackMethod, &Ack{Node: r.opts.NodeID, Table: table, Applied: applied}, new(Ack)) // status only
}

// peerFailed records a failed round: a refusal is counted and logged
// (throttled), a peer going down is logged once.
func (r *Replicator) peerFailed(p *peerState, err error) {
	reason := classify(err)
	r.mu.Lock()
	wasUp := p.connected
	p.connected, p.lastErr = false, err.Error()
	if reason != "" {
		p.refused++
		r.refused[reason]++
	}
	r.mu.Unlock()
	switch {
	case reason != "":
		r.logRefusal(p.addr, reason, "refused pulling from peer", err)
	case errors.Is(err, localdb.ErrChunksMissing):
		// A deployment landed on the peer between the chunks and the
		// pointer: the next round pulls the new chunks first.
		r.log.Debug("localdb replication: pointer ahead of its chunks, retrying", "peer", p.addr, "err", err)
	case wasUp:
		r.log.Warn("localdb replication: peer unreachable, retrying with back-off", "peer", p.addr, "err", err)
	}
}

// classify names the refusal err is, or "" for an outage.
func classify(err error) string {
	switch {
	case errors.Is(err, errBadProof):
		return ReasonBadProof
	case status.Code(err) == codes.Unauthenticated:
		return ReasonPeerRefusedKey
	case errors.Is(err, hlc.ErrSkew):
		return ReasonFutureStamp
	case errors.Is(err, ErrMalformed), errors.Is(err, localdb.ErrMalformedChange), errors.Is(err, localdb.ErrUnknownTable),
		status.Code(err) == codes.Internal, status.Code(err) == codes.InvalidArgument:
		return ReasonMalformed
	}
	return ""
}

// logRefusal logs at most once per peer and reason per logEvery.
func (r *Replicator) logRefusal(peerAddr, reason, msg string, err error) {
	now := r.opts.Clock.Now()
	k := peerAddr + "\x00" + reason
	r.mu.Lock()
	last, seen := r.logged[k]
	if seen && now.Sub(last) < logEvery {
		r.mu.Unlock()
		return
	}
	r.logged[k] = now
	r.mu.Unlock()
	r.log.Warn("localdb replication: "+msg+" (repeats are not logged for a minute)", "peer", peerAddr, "reason", reason, "err", err)
}

// admit is the server's key check, run by gRPC when a stream's HEADERS
// arrive: before the stream exists, before any of its message is read or
// allocated for. A refused stream is answered codes.Unauthenticated at
// once; the bytes it sends after are dropped. It is called from the
// connection's reader goroutine and must not block: it takes mu briefly.
func (r *Replicator) admit(ctx context.Context, _ *tap.Info) (context.Context, error) {
	if _, err := r.checkKey(ctx); err != nil {
		return nil, err
	}
	return ctx, nil
}

// prove answers an admitted call's nonce with HMAC-SHA256(key, nonce) in
// the response header. It checks the key again: a key replaced by
// SetAPIKey since the stream was admitted refuses the call.
func (r *Replicator) prove(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	nonce, err := r.checkKey(ctx)
	if err != nil {
		return nil, err
	}
	if nonce != "" {
		_ = grpc.SetHeader(ctx, metadata.Pairs(proofHeader, proof(r.apiKey(), nonce)))
	}
	return handler(ctx, req)
}

// checkKey compares the caller's key (metadata of ctx) with this node's in
// constant time; a refusal is counted, logged (throttled) and returned as
// the caller's status.
func (r *Replicator) checkKey(ctx context.Context) (nonce string, err error) {
	got, nonce, ok := incomingKey(ctx)
	reason := ""
	switch {
	case !ok:
		reason = ReasonMissingKey
	case !keysEqual(got, r.apiKey()):
		reason = ReasonWrongKey
	}
	if reason == "" {
		return nonce, nil
	}
	r.mu.Lock()
	r.refused[reason]++
	r.mu.Unlock()
	r.logRefusal(callerHost(ctx), reason, "refused a peer's request", errors.New("missing or mismatched LocalDb:Replication:ApiKey"))
	return "", unauthenticated(reason)
}

// callerHost is the caller's IP address (its port changes per connection).
func callerHost(ctx context.Context) string {
	pr, ok := peer.FromContext(ctx)
	if !ok || pr.Addr == nil {
		return "unknown"
	}
	from := pr.Addr.String()
	if host, _, err := net.SplitHostPort(from); err == nil {
		return host
	}
	return from
}

// pull serves one Pull from the LocalDb.
func (r *Replicator) pull(ctx context.Context, p *Pull) (*Batch, error) {
	cs, more, err := r.opts.Local.Changes(ctx, p.Table, p.After, int(p.Limit))
	if err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	b := &Batch{Changes: cs, More: more}
	r.mu.Lock()
	s := r.servedTo(p.Node)
	s.sent[p.Table] += int64(len(cs))
	s.lastPull = r.opts.Clock.Now()
	r.mu.Unlock()
	return b, nil
}

func (r *Replicator) ack(_ context.Context, a *Ack) (*Ack, error) {
	r.mu.Lock()
	r.servedTo(a.Node).acked[a.Table] = a.Applied
	r.mu.Unlock()
	return a, nil
}

// servedTo is the state of a puller; mu must be held.
func (r *Replicator) servedTo(node string) *servedState {
	s, ok := r.served[node]
	if !ok {
		s = &servedState{sent: map[string]int64{}, acked: map[string]hlc.Stamp{}}
		r.served[node] = s
	}
	return s
}
