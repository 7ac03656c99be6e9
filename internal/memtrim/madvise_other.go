//go:build !linux

package memtrim

import "errors"

// dontNeed is not done outside Linux: /proc/self/maps, where the spans
// come from, is Linux's.
func dontNeed(Span) error { return errors.ErrUnsupported }
