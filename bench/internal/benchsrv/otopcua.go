package benchsrv

import (
	"context"
	"errors"
)

// ErrNotReady is returned while otopcua's server package cannot be wired.
var ErrNotReady = errors.New("benchsrv: the otopcua implementation is not wired yet: package github.com/otopcua/otopcua/opcua (opcua.New / Start / AddressSpace) does not exist in this checkout")

func newOtopcua(ctx context.Context, cfg Config) (Server, error) {
	return nil, ErrNotReady
}
