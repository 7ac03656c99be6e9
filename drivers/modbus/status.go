package modbus

import (
	"errors"

	"github.com/gopcua/opcua/ua"
	mb "github.com/simonvetter/modbus"
)

// outcome is what a request's error means for its tags and the connection.
type outcome int

const (
	// answered: values came back.
	answered outcome = iota
	// refused: the device answered with an exception; its tags get the
	// exception's code, the connection stays.
	refused
	// unreachable: a gateway answered that it cannot reach the device; its
	// tags get the communication codes, the connection (to the gateway)
	// stays.
	unreachable
	// broken: no usable answer (refused or reset connection, timeout,
	// malformed or mismatched frame, an exception code outside the
	// protocol); the connection is dropped and the driver backs off.
	broken
	// internal: the request was never sent because the driver asked for
	// something the protocol does not allow (a bug).
	internal
)

// classify is the outcome of a request that returned err and, for refused,
// the OPC UA status its tags (or the write) get:
//
//	01 Illegal Function, 02 Illegal Data Address  BadConfigurationError
//	03 Illegal Data Value                         BadOutOfRange
//	04 Server Device Failure, 05 Acknowledge,
//	06 Server Device Busy, 08 Memory Parity Error BadDeviceFailure
//	0A Gateway Path Unavailable,
//	0B Gateway Target Failed To Respond          unreachable
func classify(err error) (outcome, ua.StatusCode) {
	switch {
	case err == nil:
		return answered, ua.StatusGood
	case errors.Is(err, mb.ErrIllegalFunction), errors.Is(err, mb.ErrIllegalDataAddress):
		return refused, ua.StatusBadConfigurationError
	case errors.Is(err, mb.ErrIllegalDataValue):
		return refused, ua.StatusBadOutOfRange
	case errors.Is(err, mb.ErrServerDeviceFailure), errors.Is(err, mb.ErrAcknowledge),
		errors.Is(err, mb.ErrServerDeviceBusy), errors.Is(err, mb.ErrMemoryParityError):
		return refused, ua.StatusBadDeviceFailure
	case errors.Is(err, mb.ErrGWPathUnavailable), errors.Is(err, mb.ErrGWTargetFailedToRespond):
		return unreachable, ua.StatusBadCommunicationError
	case errors.Is(err, mb.ErrUnexpectedParameters):
		return internal, ua.StatusBadInternalError
	}
	return broken, ua.StatusBadCommunicationError
}
