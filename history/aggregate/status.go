package aggregate

import "github.com/gopcua/opcua/ua"

// The historian information bits of a StatusCode (Part 4 StatusCode,
// Part 13 §5.3.3). They mean something only when the InfoType bits
// say DataValue; every result of Compute that is not Bad carries
// InfoTypeDataValue and exactly one data location (Raw, Calculated or
// Interpolated) plus any of Partial, ExtraData and MultiValue.
const (
	// InfoTypeDataValue (bits 10–11 = 01) says the low bits are DataValue
	// information bits.
	InfoTypeDataValue ua.StatusCode = 0x0400

	// HistorianRaw is data location 0 (bits 0–1): a raw value as stored.
	HistorianRaw ua.StatusCode = 0x0
	// HistorianCalculated is data location 1: a value calculated from raw
	// values.
	HistorianCalculated ua.StatusCode = 0x1
	// HistorianInterpolated is data location 2: a value interpolated or
	// extrapolated from raw values.
	HistorianInterpolated ua.StatusCode = 0x2
	// HistorianPartial (bit 2): the value is calculated over an incomplete
	// interval and may change when read again (Part 13 §5.3.3.2).
	HistorianPartial ua.StatusCode = 0x4
	// HistorianExtraData (bit 3): a raw value hides other values at the
	// same timestamp. This package never sets it.
	HistorianExtraData ua.StatusCode = 0x8
	// HistorianMultiValue (bit 4): several values meet the aggregate's
	// criterion (for example equal minima at different times).
	HistorianMultiValue ua.StatusCode = 0x10

	// historianLocation masks the data location bits.
	historianLocation ua.StatusCode = 0x3
	// codeMask keeps the severity and sub-code of a StatusCode.
	codeMask ua.StatusCode = 0xFFFF0000
)

// quality is the severity of a raw value's StatusCode.
type quality uint8

const (
	good quality = iota
	uncertain
	bad
)

func qualityOf(s ua.StatusCode) quality {
	switch s >> 30 {
	case 0:
		return good
	case 1:
		return uncertain
	default:
		return bad
	}
}

// usable reports whether a raw value takes part in calculations and bounds:
// it is not Bad, and not Uncertain when TreatUncertainAsBad is set
// (Part 13 §3.1.7, "non-Bad").
func (c Config) usable(s ua.StatusCode) bool {
	switch qualityOf(s) {
	case good:
		return true
	case uncertain:
		return !c.TreatUncertainAsBad
	default:
		return false
	}
}

// withBits returns the severity and sub-code of code with the DataValue
// information bits set to bits.
func withBits(code, bits ua.StatusCode) ua.StatusCode {
	return code&codeMask | InfoTypeDataValue | bits
}
