package gate

import (
	"testing"
	"time"
)

func TestLicenceOf(t *testing.T) {
	for _, tc := range []struct {
		in   LicenceInput
		want Licence
	}{
		{LicenceInput{}, Licensed},
		{LicenceInput{Whole: false, LeaseValid: false, HoldLeft: time.Second}, Licensed}, // not lease-majority: unchanged
		{LicenceInput{LeaseMajority: true, Whole: true}, Licensed},
		{LicenceInput{LeaseMajority: true, LeaseValid: true}, Licensed},
		{LicenceInput{LeaseMajority: true}, Unlicensed},
		{LicenceInput{LeaseMajority: true, LeaseValid: true, HoldLeft: time.Millisecond}, Holding},
		{LicenceInput{LeaseMajority: true, Whole: true, HoldLeft: time.Second}, Holding},
		{LicenceInput{LeaseMajority: true, LeaseValid: true, HoldLeft: -time.Second}, Licensed},
	} {
		if got := LicenceOf(tc.in); got != tc.want {
			t.Errorf("LicenceOf(%+v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if d := Decide(Input{Role: RoleFencedPrimary, Member: true, Drivers: 1}); d.Allow || d.Reason != DeniedFenced || d.Reason.Label() != "fenced" {
		t.Fatalf("fenced Primary: %+v", d)
	}
}
