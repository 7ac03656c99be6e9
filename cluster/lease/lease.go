package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Grant is the state of the lease as the store returned it.
type Grant struct {
	// Holder is the owner holding the lease; "" when it is free or expired.
	Holder string
	// Epoch rises by at least 1 each time the lease changes hands (a
	// fencing token); it is unchanged on a renewal.
	Epoch uint64
	// TTL is the time to live, counted on the STORE's clock from the
	// moment the store applied the request: for Acquire the granted time
	// to live, for Holder what is left of it (0 when free).
	TTL time.Duration
}

// ErrHeld is wrapped by Acquire when another live owner holds the lease;
// the error is a *HeldError naming it.
var ErrHeld = errors.New("lease: held by another owner")

// HeldError is Acquire's refusal: Holder holds the lease at Epoch.
type HeldError struct {
	Holder string
	Epoch  uint64
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease: held by %q (epoch %d)", e.Holder, e.Epoch)
}

// Unwrap makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Lease is one shared lease: the lease of ONE key, the ClusterId given to
// its constructor. All methods are safe for concurrent use and return by
// ctx's end even when the store hangs.
//
// Any error other than a *HeldError means the store did not answer or
// failed: the caller must treat the lease as NOT held.
type Lease interface {
	// Acquire takes the lease for owner when it is free, expired, already
	// held by owner (then it is a renewal: the expiry moves to now+TTL on
	// the store's clock, the epoch stays), or held by one of evict
	// (holders the caller has proven dead: their cluster port refuses
	// connections). Otherwise it returns a *HeldError.
	Acquire(ctx context.Context, owner string, evict ...string) (Grant, error)
	// Release frees the lease if owner holds it (no error when it does not).
	Release(ctx context.Context, owner string) error
	// Holder reads the lease without changing it.
	Holder(ctx context.Context) (Grant, error)
	// TTL is the configured time to live.
	TTL() time.Duration
	// Name is the provider for logs and config output: "configdb
	// (postgres)", "etcd", "memory".
	Name() string
}

// ErrInvalid is wrapped by the constructors and methods for an argument
// they cannot use (an empty cluster id or owner, a TTL below the minimum).
var ErrInvalid = errors.New("lease: invalid argument")

func checkOwner(owner string) error {
	if owner == "" {
		return fmt.Errorf("%w: empty owner", ErrInvalid)
	}
	return nil
}

func checkNew(clusterID string, ttl, min time.Duration) error {
	if clusterID == "" {
		return fmt.Errorf("%w: empty cluster id", ErrInvalid)
	}
	if ttl < min {
		return fmt.Errorf("%w: ttl %v: at least %v", ErrInvalid, ttl, min)
	}
	return nil
}
