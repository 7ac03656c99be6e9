package linux

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// space is the network namespace the executor works in: the process's own
// (zero value, production) or one named by a path such as
// /var/run/netns/NAME (tests).
type space struct {
	path string
	ns   netns.NsHandle // valid only when path != ""
}

// openSpace opens the namespace at path ("" = the process's own).
func openSpace(path string) (space, error) {
	if path == "" {
		return space{}, nil
	}
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return space{}, fmt.Errorf("floating/linux: open network namespace %s: %w", path, err)
	}
	return space{path: path, ns: ns}, nil
}

// handle is a netlink handle whose socket lives in the namespace.
func (s space) handle() (*netlink.Handle, error) {
	if s.path == "" {
		return netlink.NewHandle()
	}
	return netlink.NewHandleAt(s.ns)
}

// run calls fn on a thread that is inside the namespace, then moves the
// thread back. Sockets fn creates stay in the namespace for their whole
// life, whichever thread later uses them. If moving back fails the thread
// stays locked, and the Go runtime ends it with the goroutine instead of
// reusing it in the wrong namespace.
func (s space) run(fn func() error) error {
	if s.path == "" {
		return fn()
	}
	runtime.LockOSThread()
	own, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("floating/linux: own network namespace: %w", err)
	}
	defer own.Close()
	if err := netns.Set(s.ns); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("floating/linux: enter network namespace %s: %w", s.path, err)
	}
	ferr := fn()
	if err := netns.Set(own); err != nil {
		return errors.Join(ferr, fmt.Errorf("floating/linux: leave network namespace %s: %w", s.path, err))
	}
	runtime.UnlockOSThread()
	return ferr
}

func (s space) close() {
	if s.path != "" {
		s.ns.Close()
	}
}
