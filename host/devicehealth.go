package host

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/dataplane"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/redundancy"
)

// DeviceHandOverActor is the audit row's actor of a device hand-over
// (Redundancy:DeviceHealth failover): no admin user asked for it.
const DeviceHandOverActor = "device-health"

// deviceHandOverTimeout bounds the audit write and the send of one device
// hand-over.
const deviceHandOverTimeout = 10 * time.Second

// deviceHealth joins the driver host's device states and the manual
// failover path to the OpcUaPublishActor (Redundancy:DeviceHealth). The
// publish actor starts before the data plane and the failover backend, so
// both are set later; until then the node reaches 0 of 0 devices and a
// hand-over is refused.
type deviceHealth struct {
	clusterID string
	log       *slog.Logger
	host      atomic.Pointer[dataplane.Host]
	backend   atomic.Pointer[adminBackend]
	running   atomic.Bool // a hand-over is under way
}

// publishOptions fills the device-health options of the publish actor from
// Redundancy:DeviceHealth.
func (d *deviceHealth) publishOptions(cfg config.RedundancyConfig, o *redundancy.PublishActorOptions) {
	o.Devices = d.counts
	o.DeviceLevel = cfg.DeviceHealth == config.DeviceHealthLevel || cfg.DeviceHealth == config.DeviceHealthFailover
	if cfg.DeviceHealth == config.DeviceHealthFailover {
		o.DeviceFailover = &redundancy.DeviceFailover{After: cfg.DeviceFailoverAfter, Hold: cfg.DeviceFailoverHold}
		o.HandOver = d.handOver
	}
}

// counts is PublishActorOptions.Devices: connected devices (not
// degraded, drivers.Condition) and all devices of the applied deployment.
func (d *deviceHealth) counts() (reached, total int) {
	h := d.host.Load()
	if h == nil {
		return 0, 0
	}
	return countReached(h.Devices())
}

// countReached counts the devices whose state is connected.
func countReached(devices []dataplane.DeviceStatus) (reached, total int) {
	for _, s := range devices {
		if s.State == drivers.StateConnected.String() {
			reached++
		}
	}
	return reached, len(devices)
}

// handOver is PublishActorOptions.HandOver: it runs the manual failover
// path (peer guard, audit row with the reason, ManualFailover to this
// Primary, which then drains and leaves) on its own goroutine, one at a
// time.
func (d *deviceHealth) handOver(reason string) {
	b := d.backend.Load()
	if b == nil || !d.running.CompareAndSwap(false, true) {
		d.log.Warn("device hand-over not started: the failover path is not ready or a hand-over is under way", "reason", reason)
		return
	}
	go func() {
		defer d.running.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), deviceHandOverTimeout)
		defer cancel()
		res, err := b.failover(ctx, d.clusterID, DeviceHandOverActor, reason)
		if err != nil {
			d.log.Warn("device hand-over refused or failed", "reason", reason, "err", err)
			return
		}
		d.log.Warn("device hand-over sent", "target", res.Target, "epoch", res.Epoch, "reason", reason)
	}()
}
