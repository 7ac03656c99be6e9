package subload

import (
	"errors"
	"fmt"
	"time"
)

// Config describes one run. Zero values take the documented defaults
// (Defaults); URL and Items are required.
type Config struct {
	// URL is the server's endpoint ("opc.tcp://127.0.0.1:4840").
	URL string
	// Impl labels the result (e.g. "gopcua"); not interpreted.
	Impl string
	// Items is the number of variables to monitor.
	Items int
	// Namespace and FirstID locate the variables: ns=Namespace;i=FirstID+k
	// for k in [0, Items). Default: 1 and 1000 (benchsrv's layout).
	Namespace uint16
	FirstID   uint32
	// RoundsID is the numeric id (ns=Namespace) of the server's update-round
	// counter, read at both ends of the window; 0 skips it. Default: none.
	RoundsID uint32

	// PublishingInterval of the subscription. Default: 100 ms.
	PublishingInterval time.Duration
	// SamplingInterval of every monitored item. Default: 100 ms.
	SamplingInterval time.Duration
	// UpdateInterval is how often the server sets every variable; it only
	// sets the expected rates of the result. Default: SamplingInterval.
	UpdateInterval time.Duration
	// QueueSize of every monitored item. Default: 1.
	QueueSize uint32
	// KeepAliveCount (publishing intervals without data before a
	// keep-alive). Default: 10.
	KeepAliveCount uint32
	// LifetimeCount of the subscription. Default: 300.
	LifetimeCount uint32
	// MaxNotificationsPerPublish asked of the server; 0 means no limit.
	MaxNotificationsPerPublish uint32

	// InFlight is the number of Publish requests kept outstanding.
	// Default: 10.
	InFlight int
	// Batch is the number of items per CreateMonitoredItems request.
	// Default: 1000.
	Batch int

	// Warmup runs before the measured window. Default: 5 s.
	Warmup time.Duration
	// Measure is the length of the measured window. Default: 20 s.
	Measure time.Duration

	// CallTimeout bounds every service call other than Publish.
	// Default: 30 s.
	CallTimeout time.Duration
	// PublishTimeout bounds one Publish request. Default: 10 s.
	PublishTimeout time.Duration
	// StallTimeout fails the run when no Publish response has arrived for
	// this long. Default: 10 s.
	StallTimeout time.Duration

	// ServerPID is the server process to measure; 0 skips CPU and RSS.
	ServerPID int
	// RSSEvery is the RSS sampling period. Default: 250 ms.
	RSSEvery time.Duration

	// OnWindow, when set, is called once the measured window has opened,
	// on the run's goroutine; it must not block. Tests use it to fail
	// the server inside the window.
	OnWindow func()
}

// Defaults returns c with zero fields set to their defaults, or an error
// naming the first invalid field.
func (c Config) Defaults() (Config, error) {
	if c.URL == "" {
		return c, errors.New("subload: URL is required")
	}
	if c.Items < 1 {
		return c, fmt.Errorf("subload: Items = %d, want at least 1", c.Items)
	}
	if c.Namespace == 0 {
		c.Namespace = 1
	}
	if c.FirstID == 0 {
		c.FirstID = 1000
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.PublishingInterval, 100*time.Millisecond)
	def(&c.SamplingInterval, 100*time.Millisecond)
	def(&c.UpdateInterval, c.SamplingInterval)
	def(&c.Warmup, 5*time.Second)
	def(&c.Measure, 20*time.Second)
	def(&c.CallTimeout, 30*time.Second)
	def(&c.PublishTimeout, 10*time.Second)
	def(&c.StallTimeout, 10*time.Second)
	def(&c.RSSEvery, 250*time.Millisecond)
	if c.QueueSize == 0 {
		c.QueueSize = 1
	}
	if c.KeepAliveCount == 0 {
		c.KeepAliveCount = 10
	}
	if c.LifetimeCount == 0 {
		c.LifetimeCount = 300
	}
	if c.LifetimeCount < 3*c.KeepAliveCount {
		return c, fmt.Errorf("subload: LifetimeCount %d must be at least 3 × KeepAliveCount %d", c.LifetimeCount, c.KeepAliveCount)
	}
	if c.InFlight <= 0 {
		c.InFlight = 10
	}
	if c.Batch <= 0 {
		c.Batch = 1000
	}
	if keepAlive := c.PublishingInterval * time.Duration(c.KeepAliveCount); c.StallTimeout <= keepAlive {
		return c, fmt.Errorf("subload: StallTimeout %v must exceed the keep-alive period %v", c.StallTimeout, keepAlive)
	}
	return c, nil
}

// Deadline is the longest a run with this configuration may take: setup
// (dial, session, subscription, items) plus warm-up, window and cleanup.
func (c Config) Deadline() time.Duration {
	batches := (c.Items + c.Batch - 1) / c.Batch
	setup := 3*c.CallTimeout + time.Duration(batches)*c.CallTimeout
	return setup + c.Warmup + c.Measure + 2*c.CallTimeout
}
