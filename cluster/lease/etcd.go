package lease

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MinEtcdTTL is the shortest time to live NewEtcd accepts: etcd leases
// count whole seconds (a TTL is rounded up to the next second, and etcd
// itself raises a TTL below its minimum, 2 s with default timings).
const MinEtcdTTL = time.Second

// EtcdKeyPrefix is the prefix of the etcd keys: the lease of cluster c is
// the key EtcdKeyPrefix + c.
const EtcdKeyPrefix = "/otopcua/lease/"

// etcdLease is the lease as one etcd key attached to an etcd lease (see the
// package documentation).
type etcdLease struct {
	endpoints []string
	key       string
	epochKey  string // key + "/epoch": the last epoch granted
	ttl       time.Duration
	ttlSec    int64
	hc        *http.Client

	mu   sync.Mutex // guards next
	next int        // index of the endpoint to try first (the last that answered)
}

var _ Lease = (*etcdLease)(nil)

// NewEtcd returns the lease of clusterID in the etcd cluster at endpoints
// (client URLs such as http://127.0.0.1:2379, tried in turn). ttl is at
// least MinEtcdTTL and is rounded up to whole seconds for etcd. client nil
// means a client of its own; the caller's client sets TLS and timeouts, and
// every request is also bounded by the caller's context. NewEtcd does not
// contact etcd.
func NewEtcd(endpoints []string, clusterID string, ttl time.Duration, client *http.Client) (Lease, error) {
	if err := checkNew(clusterID, ttl, MinEtcdTTL); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("%w: no etcd endpoints", ErrInvalid)
	}
	eps := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		e = strings.TrimRight(strings.TrimSpace(e), "/")
		if !strings.HasPrefix(e, "http://") && !strings.HasPrefix(e, "https://") {
			return nil, fmt.Errorf("%w: etcd endpoint %q: want http://host:port or https://host:port", ErrInvalid, e)
		}
		eps = append(eps, e)
	}
	if client == nil {
		client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
	}
	sec := int64((ttl + time.Second - 1) / time.Second)
	return &etcdLease{endpoints: eps, key: EtcdKeyPrefix + clusterID, epochKey: EtcdKeyPrefix + clusterID + "/epoch", ttl: ttl, ttlSec: sec, hc: client}, nil
}

// etcdValue is the key's value.
type etcdValue struct {
	Holder string `json:"holder"`
	Epoch  uint64 `json:"epoch"`
}

// i64 is an int64 of the gateway's JSON: a string ("12") or a number.
type i64 int64

func (n *i64) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	*n = i64(v)
	return err
}

func (n i64) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(n), 10) + `"`), nil
}

type etcdHeader struct {
	Revision i64 `json:"revision"`
}

type etcdKV struct {
	Key            []byte `json:"key"`
	Value          []byte `json:"value"`
	CreateRevision i64    `json:"create_revision"`
	ModRevision    i64    `json:"mod_revision"`
	Lease          i64    `json:"lease"`
}

type etcdRangeResp struct {
	Header etcdHeader `json:"header"`
	Kvs    []etcdKV   `json:"kvs"`
}

// observed is the key as one read saw it.
type observed struct {
	rev   int64 // the store's revision at the read
	found bool
	mod   int64 // mod_revision
	lease int64
	val   etcdValue
	// The epoch key (no etcd lease: it outlives every holder).
	efound bool
	emod   int64
	epoch  uint64
}

// Acquire implements Lease. A take (free, or evicting) grants a new etcd
// lease and puts the key in a transaction that compares the key's
// mod_revision (or its absence) with what the preceding read saw; a renewal
// keeps the etcd lease alive and checks the key is still on it.
func (e *etcdLease) Acquire(ctx context.Context, owner string, evict ...string) (Grant, error) {
	if err := checkOwner(owner); err != nil {
		return Grant{}, err
	}
	for attempt := 0; attempt < 10; attempt++ {
		o, err := e.read(ctx)
		if err != nil {
			return Grant{}, err
		}
		switch {
		case o.found && o.val.Holder == owner:
			g, ok, err := e.renew(ctx, o)
			if err != nil || ok {
				return g, err
			}
		case !o.found || slices.Contains(evict, o.val.Holder) || o.val.Holder == "":
			g, ok, err := e.take(ctx, owner, o)
			if err != nil || ok {
				return g, err
			}
		default:
			return Grant{}, &HeldError{Holder: o.val.Holder, Epoch: o.val.Epoch}
		}
	}
	return Grant{}, fmt.Errorf("lease: etcd: acquire %s: the key kept changing", e.key)
}

// renew keeps o's etcd lease alive, then checks the key is still the one
// read (same mod_revision, same etcd lease): the key then lives at least
// TTL from the keepalive. ok false: the key changed meanwhile (read again).
func (e *etcdLease) renew(ctx context.Context, o observed) (Grant, bool, error) {
	var ka struct {
		Result struct {
			ID  i64 `json:"ID"`
			TTL i64 `json:"TTL"`
		} `json:"result"`
	}
	if err := e.call(ctx, "/v3/lease/keepalive", map[string]any{"ID": i64(o.lease)}, &ka); err != nil {
		return Grant{}, false, err
	}
	if ka.Result.TTL <= 0 {
		return Grant{}, false, nil // expired: the key is gone or going
	}
	o2, err := e.read(ctx)
	if err != nil {
		return Grant{}, false, err
	}
	if !o2.found || o2.lease != o.lease || o2.val != o.val {
		return Grant{}, false, nil
	}
	return Grant{Holder: o.val.Holder, Epoch: o.val.Epoch, TTL: time.Duration(ka.Result.TTL) * time.Second}, true, nil
}

// take grants a new etcd lease and puts the key on it for owner, with the
// epoch key raised by 1, unless either key changed since o. Comparing the
// epoch key too rules out an A-B-A history (the key absent at the read,
// taken and released by another owner meanwhile, absent again): every take
// rewrites the epoch key, so two takes can never both succeed from one read
// and no epoch is granted twice.
func (e *etcdLease) take(ctx context.Context, owner string, o observed) (Grant, bool, error) {
	var gr struct {
		ID  i64 `json:"ID"`
		TTL i64 `json:"TTL"`
	}
	if err := e.call(ctx, "/v3/lease/grant", map[string]any{"TTL": i64(e.ttlSec)}, &gr); err != nil {
		return Grant{}, false, err
	}
	if gr.ID == 0 || gr.TTL <= 0 {
		return Grant{}, false, fmt.Errorf("lease: etcd: lease grant answered ID %d TTL %d", gr.ID, gr.TTL)
	}
	epoch := max(o.epoch, o.val.Epoch) + 1
	val, _ := json.Marshal(etcdValue{Holder: owner, Epoch: epoch})
	req := map[string]any{
		"compare": []any{unchanged(e.key, o.found, o.mod), unchanged(e.epochKey, o.efound, o.emod)},
		"success": []any{
			map[string]any{"request_put": map[string]any{"key": []byte(e.key), "value": val, "lease": gr.ID}},
			map[string]any{"request_put": map[string]any{"key": []byte(e.epochKey), "value": []byte(strconv.FormatUint(epoch, 10))}},
		},
	}
	var tr struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := e.call(ctx, "/v3/kv/txn", req, &tr); err != nil {
		return Grant{}, false, err
	}
	if !tr.Succeeded {
		e.revoke(ctx, int64(gr.ID))
		return Grant{}, false, nil
	}
	if o.found && o.lease != 0 {
		e.revoke(ctx, o.lease) // the evicted holder's etcd lease holds no key of ours any more
	}
	return Grant{Holder: owner, Epoch: epoch, TTL: time.Duration(gr.TTL) * time.Second}, true, nil
}

// unchanged is the txn comparison "key is still as read": its mod_revision
// when it was there, its absence (create_revision 0) when not.
func unchanged(key string, found bool, mod int64) map[string]any {
	if !found {
		return map[string]any{"key": []byte(key), "result": "EQUAL", "target": "CREATE", "create_revision": i64(0)}
	}
	return map[string]any{"key": []byte(key), "result": "EQUAL", "target": "MOD", "mod_revision": i64(mod)}
}

// revoke revokes an etcd lease, best effort (an unused lease expires by
// itself).
func (e *etcdLease) revoke(ctx context.Context, id int64) {
	_ = e.call(ctx, "/v3/lease/revoke", map[string]any{"ID": i64(id)}, nil)
}

// Release implements Lease: revoking the holder's etcd lease deletes the
// key. When another owner took the key meanwhile, it is on another etcd
// lease, which stays.
func (e *etcdLease) Release(ctx context.Context, owner string) error {
	if err := checkOwner(owner); err != nil {
		return err
	}
	o, err := e.read(ctx)
	if err != nil || !o.found || o.val.Holder != owner {
		return err
	}
	if o.lease == 0 {
		req := map[string]any{
			"compare": []any{map[string]any{"key": []byte(e.key), "result": "EQUAL", "target": "MOD", "mod_revision": i64(o.mod)}},
			"success": []any{map[string]any{"request_delete_range": map[string]any{"key": []byte(e.key)}}},
		}
		return e.call(ctx, "/v3/kv/txn", req, nil)
	}
	if err := e.call(ctx, "/v3/lease/revoke", map[string]any{"ID": i64(o.lease)}, nil); err != nil && !notFound(err) {
		return err
	}
	return nil
}

// Holder implements Lease; TTL is what is left of the key's etcd lease.
func (e *etcdLease) Holder(ctx context.Context) (Grant, error) {
	o, err := e.read(ctx)
	if err != nil {
		return Grant{}, err
	}
	if !o.found {
		return Grant{}, nil
	}
	g := Grant{Holder: o.val.Holder, Epoch: o.val.Epoch}
	if o.lease != 0 {
		var tl struct {
			TTL i64 `json:"TTL"`
		}
		if err := e.call(ctx, "/v3/lease/timetolive", map[string]any{"ID": i64(o.lease)}, &tl); err != nil && !notFound(err) {
			return Grant{}, err
		}
		if tl.TTL <= 0 {
			return Grant{Epoch: o.val.Epoch}, nil // expired, deletion pending
		}
		g.TTL = time.Duration(tl.TTL) * time.Second
	}
	return g, nil
}

// read ranges the key and its epoch key in one transaction (one
// linearizable snapshot).
func (e *etcdLease) read(ctx context.Context) (observed, error) {
	var tr struct {
		Header    etcdHeader `json:"header"`
		Responses []struct {
			ResponseRange etcdRangeResp `json:"response_range"`
		} `json:"responses"`
	}
	req := map[string]any{"success": []any{
		map[string]any{"request_range": map[string]any{"key": []byte(e.key)}},
		map[string]any{"request_range": map[string]any{"key": []byte(e.epochKey)}},
	}}
	if err := e.call(ctx, "/v3/kv/txn", req, &tr); err != nil {
		return observed{}, err
	}
	if len(tr.Responses) != 2 {
		return observed{}, fmt.Errorf("lease: etcd: read %s: %d answers to 2 ranges", e.key, len(tr.Responses))
	}
	o := observed{rev: int64(tr.Header.Revision)}
	if kvs := tr.Responses[1].ResponseRange.Kvs; len(kvs) > 0 {
		ep, err := strconv.ParseUint(string(kvs[0].Value), 10, 64)
		if err != nil {
			return observed{}, fmt.Errorf("lease: etcd: key %s holds %q, not an epoch: %w", e.epochKey, kvs[0].Value, err)
		}
		o.efound, o.emod, o.epoch = true, int64(kvs[0].ModRevision), ep
	}
	kvs := tr.Responses[0].ResponseRange.Kvs
	if len(kvs) == 0 {
		return o, nil
	}
	kv := kvs[0]
	o.found, o.mod, o.lease = true, int64(kv.ModRevision), int64(kv.Lease)
	if err := json.Unmarshal(kv.Value, &o.val); err != nil {
		return observed{}, fmt.Errorf("lease: etcd: key %s holds %q, not a lease value: %w", e.key, kv.Value, err)
	}
	return o, nil
}

// call POSTs req as JSON to path on one endpoint after the other, starting
// with the last that answered, until one answers or ctx ends. Each attempt
// gets an equal share of what is left of ctx, so a hung endpoint leaves time
// for the others. A gateway error (HTTP status ≥ 400) from a live endpoint
// is also tried on the next (a member without quorum answers so).
func (e *etcdLease) call(ctx context.Context, path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var errs []error
	// A pass over every endpoint; passes repeat, 50 ms apart, while ctx
	// lasts: during a leader election every member answers "leader
	// changed" (HTTP 503) for a moment.
	for pass := 0; ; pass++ {
		done, err := e.pass(ctx, path, body, resp, &errs)
		if done {
			return err
		}
		wait := time.NewTimer(50 * time.Millisecond)
		select {
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("lease: etcd %s: %w", path, errors.Join(append(errs, ctx.Err())...))
		case <-wait.C:
		}
	}
}

// pass is one round of call over the endpoints; done is false when every
// endpoint failed with an error worth retrying.
func (e *etcdLease) pass(ctx context.Context, path string, body []byte, resp any, errs *[]error) (done bool, err error) {
	e.mu.Lock()
	start := e.next
	e.mu.Unlock()
	n := len(e.endpoints)
	for i := 0; i < n; i++ {
		if err := ctx.Err(); err != nil {
			return true, fmt.Errorf("lease: etcd %s: %w", path, errors.Join(append(*errs, err)...))
		}
		idx := (start + i) % n
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && i < n-1 {
			actx, cancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(n-i))
		}
		err := e.post(actx, e.endpoints[idx], path, body, resp)
		cancel()
		if err == nil {
			if idx != start {
				e.mu.Lock()
				e.next = idx
				e.mu.Unlock()
			}
			return true, nil
		}
		*errs = append(*errs, fmt.Errorf("%s: %w", e.endpoints[idx], err))
		if a := (*answerError)(nil); errors.As(err, &a) && a.final() {
			return true, fmt.Errorf("lease: etcd %s: %w", path, errors.Join(*errs...))
		}
	}
	if len(*errs) > 3*n { // keep the error readable
		*errs = (*errs)[len(*errs)-n:]
	}
	return false, nil
}

func (e *etcdLease) post(ctx context.Context, endpoint, path string, body []byte, resp any) error {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	hreq.Header.Set("Content-Type", "application/json")
	hresp, err := e.hc.Do(hreq)
	if err != nil {
		return err
	}
	defer hresp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hresp.Body, 1<<20))
	if err != nil {
		return err
	}
	if hresp.StatusCode >= 400 {
		return &answerError{status: hresp.StatusCode, body: string(bytes.TrimSpace(b))}
	}
	// A streaming call (keepalive) answers {"result": …} or {"error": …},
	// possibly followed by more lines: the first one is ours.
	if i := bytes.IndexByte(b, '\n'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(b), []byte(`{"result"`)) {
		b = b[:i]
	}
	var ge struct {
		Error any `json:"error"`
	}
	if json.Unmarshal(b, &ge) == nil && ge.Error != nil {
		return fmt.Errorf("etcd error: %s", bytes.TrimSpace(b))
	}
	if resp == nil {
		return nil
	}
	if err := json.Unmarshal(b, resp); err != nil {
		return fmt.Errorf("answer %q: %w", b, err)
	}
	return nil
}

// TTL implements Lease.
func (e *etcdLease) TTL() time.Duration { return e.ttl }

// Name implements Lease.
func (e *etcdLease) Name() string { return "etcd" }

// answerError is an etcd answer that is an error (HTTP status ≥ 400).
type answerError struct {
	status int
	body   string
}

func (a *answerError) Error() string { return fmt.Sprintf("HTTP %d: %s", a.status, a.body) }

// final reports whether the answer holds for every member (a request
// error such as "lease not found"), so trying the next endpoint is
// pointless; 5xx (no leader, timeout) and 408/429 are not final.
func (a *answerError) final() bool {
	return a.status >= 400 && a.status < 500 && a.status != http.StatusRequestTimeout && a.status != http.StatusTooManyRequests
}

// notFound reports whether err is etcd's "requested lease not found".
func notFound(err error) bool {
	var a *answerError
	return errors.As(err, &a) && (a.status == http.StatusNotFound || strings.Contains(a.body, "not found"))
}
