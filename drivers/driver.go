package drivers

import (
	"context"
	"crypto/rsa"
	"errors"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/deployment"
)

// Driver is one field device: it reads the device's whole tag set, writes one
// tag, and reports its connection state and counters. A driver is made by its
// package's New(dev deployment.Device, opts Options) and serves exactly the
// tags of that Device, in the order of dev.Tags.
//
// Who calls it, from which goroutine, and whether a method may block:
//
//   - Read is called by one goroutine, the device's poller (Poller), once per
//     poll interval. It is never called concurrently with itself (a driver
//     serializes Reads anyway, so a second caller waits). Read blocks for
//     the device's I/O: at most one request timeout for a connect and one
//     per request of the poll. It stops between requests when ctx is done
//     or the driver is closed; a request already on the wire is not
//     interrupted and ends within its timeout.
//   - Write is called by the OPC UA write path, from any goroutine,
//     concurrently with Read and with other Writes. The driver serializes
//     them on its one connection to the device (a Write waits for the
//     request in flight, not for the rest of a poll). It blocks for at most
//     one connect wait and one request timeout. A value that does not fit
//     the tag is refused before anything is sent.
//   - Connect may be called from any goroutine; Read and Write connect by
//     themselves, so calling it is optional (it makes the first connection
//     at once instead of at the first poll, and ignores the back-off).
//   - Health and Stats may be called from any goroutine at any time; they
//     take a short internal lock and never wait for I/O. Condition turns
//     a Health into the state the admin API shows (degraded included).
//   - Close may be called from any goroutine, at any time, more than once.
//     It never blocks on the device: not on a connect in progress, not on a
//     request in flight. The goroutine doing that I/O releases the
//     connection when its I/O ends (within the request timeout; a connect
//     within the Modbus client's own 5 s dial bound). After Close, Read,
//     Write and Connect return ErrClosed.
//
// A driver never panics on anything the device sends.
type Driver interface {
	// Connect opens the connection to the device now, if there is none,
	// and waits for the outcome (at most the request timeout, or ctx).
	Connect(ctx context.Context) error
	// Read polls the device once and returns one Reading per tag, indexed
	// like dev.Tags (a new slice, the caller's to keep). The error says why
	// a tag is not Good after this poll (nil when every tag is Good); the
	// readings are returned either way (nil only with ErrClosed or a ctx
	// error).
	Read(ctx context.Context) ([]Reading, error)
	// Write writes value to the tag named tag. value is converted to the
	// tag's type (Convert; for a scaled tag the inverse scaling is applied
	// first); a value that does not fit is refused with ErrOutOfRange and
	// never sent. StatusOf(err) is the OPC UA result of the write.
	Write(ctx context.Context, tag string, value any) error
	// Health is the connection state.
	Health() Health
	// Stats are the device's counters.
	Stats() Stats
	// Close releases the device. It never blocks on I/O.
	Close() error
}

// Reading is one tag's value as the data plane serves it.
type Reading struct {
	// Value is bool, int16, uint16, int32, uint32, float32 or float64, the
	// Go type ValueType(tag) names (float64 for a scaled tag). It is nil
	// until the tag's first good read and keeps the last good value while
	// Status is Bad.
	Value any
	// Status is Good or one of the Bad codes documented in the package
	// comment.
	Status ua.StatusCode
	// SourceTime is when Value was read, or, while Status is Bad, when the
	// driver first saw that status (zero before anything happened). A
	// polled driver stamps it with PolledTime.
	SourceTime time.Time
}

// PolledTime is the SourceTime a polled driver (Modbus, simulated) gives
// what it reads at t: t truncated to the millisecond, never after the
// read. A polled device has no clock of its own: its value's time is the
// poll's, and below a millisecond that only records when the node's timer
// fired and how long the request took. Whole milliseconds are what many
// OPC UA servers stamp, and what makes a recorded time cheap in the
// history (history/block: about one byte a sample for a polled analog
// instead of three or four). A driver whose device sends its own times
// (the OPC UA client driver) passes them through unchanged.
func PolledTime(t time.Time) time.Time { return t.Truncate(time.Millisecond) }

// State is a device connection's state.
type State int

// Connection states.
const (
	// StateDisconnected: no connection; the next Read dials once
	// Health.RetryAt has passed. A driver starts here.
	StateDisconnected State = iota
	// StateConnecting: a connect is in progress.
	StateConnecting
	// StateConnected: the connection is open.
	StateConnected
	// StateClosed: Close was called.
	StateClosed
	// StateDegraded is never a driver's own state: Condition derives it
	// from Health for a device that takes connections while its reads
	// all fail.
	StateDegraded
)

func (s State) String() string {
	switch s {
	case StateDisconnected:
		return "disconnected"
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateClosed:
		return "closed"
	case StateDegraded:
		return "degraded"
	}
	return "unknown"
}

// Health is a device connection's state as the admin API shows it.
type Health struct {
	// State is the connection state.
	State State
	// Since is when the driver entered State (on the injected clock).
	Since time.Time
	// RetryAt is, in StateDisconnected after a failure, the earliest time
	// of the next connect (the back-off); zero otherwise.
	RetryAt time.Time
	// LastError is the last failure of a connect, request or write; nil
	// until one happens and again after a poll in which every tag was Good.
	LastError error
	// ConnectOK is whether the last connect that ended opened a
	// connection: true while connected, and after a connection that
	// opened and then broke (a device that accepts and never answers);
	// false before any and after a connect that failed. A driver without
	// connections (simulated) leaves it false.
	ConnectOK bool
	// Reads is the current run of failed polls (Condition reads it).
	Reads ReadRun
}

// Stats are a device's counters for the metrics, on the injected clock.
type Stats struct {
	// Polls counts calls of Read that reached the device or tried to.
	Polls uint64
	// ReadsOK and ReadsFailed count read requests (a Modbus driver makes
	// one per planned request per poll; the simulated driver one per poll).
	// A request that could not be sent because the device is not connected
	// counts as failed, so for a Modbus driver ReadsOK + ReadsFailed =
	// Polls × planned requests (while the plan stays: a request the device
	// refused for an address in a gap is replaced by its parts, uncounted).
	ReadsOK, ReadsFailed uint64
	// WritesOK and WritesFailed count Write calls that reached the device
	// or were refused by it or for lack of a connection; a value refused
	// before sending (unknown tag, not writable, type, range) counts as
	// failed too.
	WritesOK, WritesFailed uint64
	// Connects counts connect attempts.
	Connects uint64
	// Connected is whether a connection is open now.
	Connected bool
	// LastPollDuration is how long the last Read took.
	LastPollDuration time.Duration
}

// Options are what every driver's New takes besides the Device.
type Options struct {
	// Clock times polls, back-off, the connect wait and the simulated
	// signals. Default: the wall clock.
	Clock clockwork.Clock
	// Logger receives the driver's state changes, with the device's name
	// as attribute "device". Default: slog.Default().
	Logger *slog.Logger
	// Seed makes the simulated driver's random walks reproducible. Default
	// 0: derived from the device's name, so every node draws the same walk.
	Seed uint64
	// Identity is the node's application instance certificate and PKI,
	// for a driver that opens secured channels (opcua with a security
	// policy other than None). Default nil: such a device cannot connect
	// and says so.
	Identity *Identity
	// Getenv reads the environment (an opcua device's passwordEnv).
	// Default os.Getenv.
	Getenv func(string) string
	// OnConditions receives the conditions of a device that mirrors its
	// upstream's ("alarms" of an opcua device). Default nil: none are
	// reported.
	OnConditions ConditionSink
	// OnMirror receives the nodes of a device's mirrored upstream subtree
	// (deployment.Mirror) each time they are browsed and differ from the
	// last call, parents before children; it returns once they are in
	// the address space (before the driver reports their values). It is
	// called from the driver's goroutine, never concurrently for one
	// device. Default nil: the subtree is not served.
	OnMirror func(nodes []MirrorNode)
}

// MirrorNode is one node of a mirrored upstream subtree: a folder (an
// upstream Object) or a Variable, with the attributes copied from the
// upstream.
type MirrorNode struct {
	// Path is the browse names from the subtree's root (the root's own
	// name first); Key is MirrorKey(Path), unique in the device.
	Path []string
	Key  string
	// Folder: an upstream Object (or Folder); else a Variable.
	Folder      bool
	DisplayName string
	Description string
	// The Variable's built-in DataType (namespace 0), ValueRank (-1
	// scalar, 1 array) and writability upstream.
	DataType  uint32
	ValueRank int32
	Writable  bool
	// EURange and EngineeringUnits are the upstream's properties, nil
	// when it has none.
	EURange          *ua.Range
	EngineeringUnits *ua.EUInformation
}

// MirrorKey is the key of a mirrored node: its browse names joined with
// '/', each name's '/' and '&' escaped with '&' (so that two paths never
// share a key). The node's NodeId is ns=<cluster>;s=<device>/<key>.
func MirrorKey(path []string) string {
	var b strings.Builder
	for k, name := range path {
		if k > 0 {
			b.WriteByte('/')
		}
		for _, r := range name {
			if r == '/' || r == '&' {
				b.WriteByte('&')
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Identity is what a driver needs to open a secured channel: the node's
// certificate and key, and its PKI's verdict on a server certificate.
type Identity struct {
	// Certificate is the node's application instance certificate (DER).
	Certificate []byte
	// PrivateKey is Certificate's key.
	PrivateKey *rsa.PrivateKey
	// TrustServer returns nil when the node's PKI trusts cert (DER, leaf
	// first), presented by the server at url, else why not. Safe for
	// concurrent use.
	TrustServer func(url string, cert []byte) error
}

// WithDefaults returns o with its zero fields set to their defaults and the
// logger tagged with the device's name.
func (o Options) WithDefaults(dev deployment.Device) Options {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	o.Logger = o.Logger.With("device", dev.Name)
	return o
}

// Defaults of a Device's optional fields (deployment.Device documents them).
const (
	DefaultPollInterval = time.Second
	DefaultTimeout      = time.Second
	DefaultUnitId       = 1
)

// PollInterval is dev's poll interval, the default when unset.
func PollInterval(dev deployment.Device) time.Duration {
	if d := dev.PollInterval.Std(); d > 0 {
		return d
	}
	return DefaultPollInterval
}

// Timeout is dev's request timeout, the default when unset.
func Timeout(dev deployment.Device) time.Duration {
	if d := dev.Timeout.Std(); d > 0 {
		return d
	}
	return DefaultTimeout
}

// Errors callers branch on. StatusOf maps each to its OPC UA status.
var (
	// ErrClosed: the driver was closed.
	ErrClosed = errors.New("driver closed")
	// ErrUnknownTag: Write named a tag the device does not have.
	ErrUnknownTag = errors.New("unknown tag")
	// ErrNotWritable: Write named a tag that is not writable.
	ErrNotWritable = errors.New("tag not writable")
	// ErrTypeMismatch: the written value's kind cannot be the tag's (a
	// number for a bool tag, a bool for a number tag, not a number at all).
	ErrTypeMismatch = errors.New("value type does not match the tag")
	// ErrOutOfRange: the written value does not fit the tag's type (after
	// inverse scaling), or is not an integer for an integer tag.
	ErrOutOfRange = errors.New("value out of range for the tag")
	// ErrNotConnected: the device has no connection and the back-off has
	// not passed, or the connection was lost.
	ErrNotConnected = errors.New("device not connected")
	// ErrCommunication: a connect or request failed for lack of
	// communication (refused, reset, timed out, a malformed answer); the
	// connection is dropped and the driver backs off.
	ErrCommunication = errors.New("device communication failed")
)

// StatusError is a failure with the OPC UA status it gives a write's result
// or the tags of a read.
type StatusError struct {
	Code ua.StatusCode
	Err  error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return e.Err }

// StatusOf is the OPC UA status of err as a Write result: Good for nil, the
// code of a StatusError, and for the sentinel errors BadNodeIdUnknown
// (ErrUnknownTag), BadNotWritable, BadTypeMismatch, BadOutOfRange,
// BadCommunicationError (ErrNotConnected, ErrCommunication), BadShutdown
// (ErrClosed),
// BadTimeout (a ctx deadline), BadRequestCancelledByClient (ctx cancelled);
// BadInternalError for anything else.
func StatusOf(err error) ua.StatusCode {
	var se *StatusError
	switch {
	case err == nil:
		return ua.StatusGood
	case errors.As(err, &se):
		return se.Code
	case errors.Is(err, ErrUnknownTag):
		return ua.StatusBadNodeIDUnknown
	case errors.Is(err, ErrNotWritable):
		return ua.StatusBadNotWritable
	case errors.Is(err, ErrTypeMismatch):
		return ua.StatusBadTypeMismatch
	case errors.Is(err, ErrOutOfRange):
		return ua.StatusBadOutOfRange
	case errors.Is(err, ErrNotConnected), errors.Is(err, ErrCommunication):
		return ua.StatusBadCommunicationError
	case errors.Is(err, ErrClosed):
		return ua.StatusBadShutdown
	case errors.Is(err, context.DeadlineExceeded):
		return ua.StatusBadTimeout
	case errors.Is(err, context.Canceled):
		return ua.StatusBadRequestCancelledByClient
	}
	return ua.StatusBadInternalError
}
