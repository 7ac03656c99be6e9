// Package lease is the shared lease of the lease-majority split-brain
// strategy: one lease per cluster (Node:ClusterId) kept in a store both nodes
// of a pair reach, so that under a network partition exactly one side holds
// it. downing.MemLease, private to each process, gives no such safety; the
// stores here do.
//
// # The API
//
// A Lease is the lease of ONE key, the cluster id given to its constructor:
//
//   - Acquire(ctx, owner, evict...) takes the lease for owner when it is
//     free, expired, already owner's (a renewal) or held by one of evict
//     (owners the caller has proven dead: their cluster port refuses
//     connections). Otherwise it returns a *HeldError (errors.Is ErrHeld)
//     naming the live holder and its epoch.
//   - Release(ctx, owner) frees it if owner holds it; Holder(ctx) reads it.
//   - The node's lease keeper (host) is the cluster core's downing.Lease
//     on top of a Lease: it bounds each call to TTL/2 and renews.
//
// Every method is safe for concurrent use and returns by the end of its
// context, also when the store hangs.
//
// # The store's clock
//
// A lease's expiry is counted on the STORE's clock from the moment the store
// applied the request, never on a node's wall clock: the two nodes of a pair
// compare nothing with their own clocks, they both ask the one clock the
// store has. Grant.TTL is that time to live; a holder that wants to act on
// the lease must count its own TTL from before it sent the request (the
// request may have been applied at any moment before the answer), and renew
// well before it runs out.
//
// # The fencing epoch
//
// Grant.Epoch rises by at least 1 each time the lease changes hands (a new
// holder after expiry, a release or an eviction) and stays the same on a
// renewal. Two grants to different owners never share an epoch, so a
// resource that remembers the highest epoch it has seen can refuse a
// deposed holder that has not noticed yet.
//
// # Errors
//
// Any error other than a *HeldError means the store did not answer or
// failed: the caller must treat the lease as NOT held (and, as a holder, act
// as if it had lost it once its own count of the TTL runs out). The store
// may or may not have applied a request that returned an error.
//
// # Providers
//
//   - NewConfigDB, Name "configdb (sqlite|postgres|sqlserver)": the
//     cluster_leases table of the Config DB (configdb schema version 5). A
//     take or renewal is one conditional UPDATE whose expiry and whose
//     expiry test both use the database's clock (PostgreSQL
//     clock_timestamp(), SQLite julianday('now'), SQL Server
//     SYSUTCDATETIME()), in microseconds; the row is created on first use
//     with INSERT … ON CONFLICT DO NOTHING (SQL Server: MERGE WITH
//     (HOLDLOCK)), so two nodes racing on a new cluster cannot both win.
//     The guarantee is the database's: as safe as its transactions and as
//     available as it is (the Config DB being one server, its outage leaves
//     the lease unobtainable by both sides). SQLite is only shared when
//     both nodes open the same file. The SQL Server statements are checked
//     statically (configdb's golden files), not against a server.
//   - NewEtcd, Name "etcd": a key EtcdKeyPrefix+clusterID in an etcd
//     cluster, attached to an etcd lease of the TTL (whole seconds, etcd's
//     clock; etcd deletes the key when its lease expires). A take grants a
//     new etcd lease and puts the key in a transaction that compares the
//     key and its epoch key (EtcdKeyPrefix+clusterID+"/epoch", no lease,
//     the last epoch granted) with what the read before it saw; a renewal
//     keeps the holder's etcd lease alive and checks the key is still on
//     it. The guarantee is etcd's linearizable, quorum-replicated store: a
//     three-member cluster keeps working with one member dead. It talks to
//     etcd's own v3 JSON API over HTTP (the gRPC gateway: /v3/kv/range,
//     /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke,
//     /v3/lease/timetolive; keys and values base64) rather than the Go
//     client go.etcd.io/etcd/client/v3, to stay clear of a gRPC version
//     conflict with protoactor-go, which pins google.golang.org/grpc. The
//     endpoints are tried in turn, starting with the last that answered,
//     each attempt getting an equal share of what is left of the context.
//   - NewMemory, Name "memory": in this process's memory on a clockwork
//     clock, FOR UNIT TESTS ONLY. It is not shared between nodes and gives
//     no split-brain safety; the node's configuration refuses it for a real
//     node.
//
// The contract every provider passes is leasetest.Run; the tests run it on
// SQLite, a real PostgreSQL (tests/pg) and three real etcd-server processes
// (tests/etcd).
package lease
