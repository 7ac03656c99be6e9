package opcua

import (
	"context"
	"errors"
	"fmt"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/client"
)

// maxBatch bounds the changes handed to the sink in one call: a flooding
// upstream is served in slices, and each slice reaches the tags before
// the next is taken from the client's bounded channel (which holds back
// that upstream's Publish loop when full, never another device).
const maxBatch = 1024

// eventHandle is the handle of the event item (alarms.go) among the tags'.
const eventHandle = -1

// pump hands the subscription's notifications to sink until the channel
// closes or ctx is done. handles maps each subscribed NodeId (as
// subscribed) to its tag.
func (d *Driver) pump(ctx context.Context, ch <-chan client.Notification, handles []int, sink drivers.ChangeSink, items []client.Item) {
	byNode := make(map[*ua.NodeID]int, len(items))
	for k, it := range items {
		byNode[it.Node] = handles[k]
	}
	batch := make([]client.Notification, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			return
		case n, ok := <-ch:
			if !ok {
				return
			}
			batch = append(batch, n)
		}
	more:
		for len(batch) < maxBatch {
			select {
			case n, ok := <-ch:
				if !ok {
					break more
				}
				batch = append(batch, n)
			default:
				break more
			}
		}
		d.apply(batch, byNode, sink)
	}
}

// apply stores one batch of notifications in the readings and reports
// the changes.
func (d *Driver) apply(batch []client.Notification, byNode map[*ua.NodeID]int, sink drivers.ChangeSink) {
	var events []client.Notification
	defer func() {
		if len(events) > 0 {
			d.onEvents(events) // after sinkMu: the conditions have their own lock
		}
	}()
	d.sinkMu.Lock()
	defer d.sinkMu.Unlock()
	changes := make([]drivers.Change, 0, len(batch))
	good, bad := 0, 0
	d.mu.Lock()
	for _, n := range batch {
		i, ok := byNode[n.Node]
		if ok && i == eventHandle {
			events = append(events, n)
			continue
		}
		if !ok || n.Value == nil {
			continue
		}
		if i >= len(d.dev.Tags) {
			if c, ok := d.mirrorChangeLocked(i-len(d.dev.Tags), n); ok {
				changes = append(changes, c)
			}
			continue
		}
		t := d.dev.Tags[i]
		at := sourceTime(n.Value, n.At)
		var r drivers.Reading
		if n.Value.Status == ua.StatusOK || n.Value.Status&0xC0000000 == 0 && n.Value.Value != nil {
			v, err := valueOf(n.Value.Value, t.Type)
			if err != nil {
				d.readings.Failed(i, ua.StatusBadTypeMismatch, at)
				bad++
			} else {
				d.readings.Good(i, v, at)
				good++
			}
		} else {
			// The upstream's own status passes through; the last value stays.
			d.readings.Failed(i, n.Value.Status, at)
			bad++
		}
		r = d.readings.At(i)
		changes = append(changes, drivers.Change{Index: i, Reading: r})
	}
	d.mu.Unlock()
	d.ctr.Poll(0)
	d.ctr.Reads(good, bad)
	if len(changes) > 0 {
		sink(changes)
	}
}

// valueOf is an upstream value as the tag's Go type.
func valueOf(v *ua.Variant, typ string) (any, error) {
	if v == nil || v.Value() == nil {
		return nil, fmt.Errorf("%w: no value", drivers.ErrTypeMismatch)
	}
	return drivers.Convert(v.Value(), typ)
}

// Write writes value to the upstream node of tag, on the active upstream
// server, and returns the upstream's result: nil for Good, a
// *drivers.StatusError with the upstream's status otherwise, and
// ErrNotConnected / ErrCommunication when it could not be asked. The
// write is sent once (never retried on another server).
func (d *Driver) Write(ctx context.Context, tag string, value any) (err error) {
	defer func() { d.ctr.Write(err) }()
	i, ok := d.byName[tag]
	var v any
	var closed bool
	var cl *client.Client
	var node *ua.NodeID
	var problem string
	switch {
	case !ok && d.dev.Mirror != nil:
		// A mirrored Variable: the value has its upstream DataType
		// already (our address space checks a write's type).
		if node, err = d.mirrorTarget(tag); err != nil {
			return err
		}
		v = value
		d.mu.Lock()
		closed, cl = d.closed, d.cl
		d.mu.Unlock()
	case !ok:
		return fmt.Errorf("%w: %s", drivers.ErrUnknownTag, tag)
	default:
		t := d.dev.Tags[i]
		if !t.Writable {
			return fmt.Errorf("%w: %s", drivers.ErrNotWritable, tag)
		}
		if v, err = drivers.Convert(value, t.Type); err != nil {
			return err
		}
		d.mu.Lock()
		closed, cl, node, problem = d.closed, d.cl, d.nodes[i], d.problemed[i]
		d.mu.Unlock()
	}
	switch {
	case closed:
		return drivers.ErrClosed
	case problem != "":
		return &drivers.StatusError{Code: ua.StatusBadConfigurationError, Err: errors.New(problem)}
	case cl == nil || node == nil:
		return drivers.ErrNotConnected
	}
	variant, err := ua.NewVariant(v)
	if err != nil {
		return fmt.Errorf("%w: %v", drivers.ErrTypeMismatch, err)
	}
	ctx, cancel := context.WithTimeout(ctx, drivers.Timeout(d.dev))
	defer cancel()
	res, err := cl.Write(ctx, &ua.WriteValue{NodeID: node, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: variant}})
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &drivers.StatusError{Code: ua.StatusBadTimeout, Err: fmt.Errorf("upstream write: no answer within the device timeout %v", drivers.Timeout(d.dev))}
	case err != nil:
		return fmt.Errorf("%w: upstream write: %w", drivers.ErrCommunication, err)
	case len(res) != 1:
		return fmt.Errorf("%w: upstream write: %d results", drivers.ErrCommunication, len(res))
	case res[0] != ua.StatusOK:
		return &drivers.StatusError{Code: res[0], Err: fmt.Errorf("upstream refused the write: %s", res[0].Error())}
	}
	return nil
}
