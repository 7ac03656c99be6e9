package aggregate

import (
	"errors"
	"fmt"
	"time"
)

// ErrConfigRejected is returned by Config.Validate for an aggregate
// configuration that Part 13 §4.2.1.2 does not allow. The caller answers
// Bad_AggregateConfigurationRejected.
var ErrConfigRejected = errors.New("aggregate: configuration rejected")

// Config is the AggregateConfiguration of one request (Part 13 §4.2.1.2)
// plus what the caller knows of the variable and of its archive.
type Config struct {
	// TreatUncertainAsBad makes Uncertain raw values count as Bad in every
	// calculation that distinguishes usable from unusable values. Uncertain
	// values that are used still make the result Uncertain_DataSubNormal.
	// Default true (Part 13 §4.2.1.2).
	TreatUncertainAsBad bool

	// PercentDataBad is the share of Bad data, in percent (0–100), from
	// which a PercentValues or time-weighted status is Bad. Default 100.
	PercentDataBad uint8

	// PercentDataGood is the share of Good data, in percent (0–100), from
	// which a PercentValues or time-weighted status is Good. Default 100.
	PercentDataGood uint8

	// UseSlopedExtrapolation extrapolates a bounding value past the last
	// usable raw value along the line through the last two usable values
	// instead of holding the last one. It has no effect when Stepped is
	// true. Default false.
	UseSlopedExtrapolation bool

	// Stepped is the variable's Stepped property (Part 11): bounding
	// values hold the previous value instead of interpolating linearly.
	// Default false.
	Stepped bool

	// DataStart is the time of the first value the archive holds for the
	// variable; zero means unknown. An interval that ends at or before it
	// is "Before Start of Data", one that straddles it is Partial.
	DataStart time.Time

	// DataEnd is the latest time up to which the archive is complete for
	// the variable, usually the time of its last stored value; zero means
	// unknown. An interval that starts after it is "After End of Data", one
	// that straddles it is Partial.
	DataEnd time.Time
}

// DefaultConfig returns the Part 13 §4.2.1.2 defaults: TreatUncertainAsBad
// true, PercentDataBad 100, PercentDataGood 100, UseSlopedExtrapolation
// false; the variable is sloped and the archive's extent unknown.
func DefaultConfig() Config {
	return Config{
		TreatUncertainAsBad: true,
		PercentDataBad:      100,
		PercentDataGood:     100,
	}
}

// Validate reports ErrConfigRejected when a percentage exceeds 100 or when
// PercentDataGood < 100 − PercentDataBad, which §4.2.1.2 forbids. Compute
// does not validate its Config; it stays deterministic on a rejected one.
func (c Config) Validate() error {
	switch {
	case c.PercentDataBad > 100:
		return fmt.Errorf("%w: PercentDataBad %d is above 100", ErrConfigRejected, c.PercentDataBad)
	case c.PercentDataGood > 100:
		return fmt.Errorf("%w: PercentDataGood %d is above 100", ErrConfigRejected, c.PercentDataGood)
	case int(c.PercentDataGood) < 100-int(c.PercentDataBad):
		return fmt.Errorf("%w: PercentDataGood %d is below 100 - PercentDataBad %d", ErrConfigRejected, c.PercentDataGood, c.PercentDataBad)
	}
	return nil
}
