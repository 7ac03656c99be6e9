package drivers

import "context"

// Pusher is a Driver whose device sends its changes by itself (an OPC UA
// subscription) instead of being polled: the driver host runs Run instead
// of a Poller, and every change reaches the tags as it arrives, none
// coalesced by a poll interval. Read still returns the current readings.
type Pusher interface {
	Driver
	// Run connects, keeps the device's subscription across reconnects and
	// calls sink with every batch of changes, until ctx is done or the
	// driver is closed; it returns ctx's error or ErrClosed. It runs on
	// the caller's goroutine; one Run per driver.
	Run(ctx context.Context, sink ChangeSink) error
}

// Change is one tag's new reading: Index is the tag's index in the
// device's Tags.
type Change struct {
	Index   int
	Reading Reading
	// Mirror, when not empty, names a mirrored node (MirrorNode.Key)
	// instead of a tag: Index is then not used.
	Mirror string
}

// ChangeSink receives a Pusher's changes, in the order the device sent
// them (a tag's changes never overtake each other). It is called one call
// at a time, never concurrently, from the driver's goroutines; it must not
// block (store the readings and return): a slow sink holds back the
// device's subscription (whose queues are bounded), never another device.
// changes is the sink's to keep.
type ChangeSink func(changes []Change)
