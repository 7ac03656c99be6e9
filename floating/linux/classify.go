package linux

import (
	"net"
	"slices"
	"strings"

	"github.com/otopcua/otopcua/floating"
)

// classify turns what Look saw into an Observation (At left zero):
//
//	present on the interface          → self (ID: own MAC, Member: self)
//	nobody answered                   → none
//	every MAC answering is a member's → member (ID: the MACs, comma-separated,
//	                                    Member: the first answer's member)
//	any MAC answering is unknown      → foreign (ID: the MACs): a conflict
//
// A foreign MAC wins over members: a conflict is reported, never fought
// over. Own MAC is never among macs (probe drops it).
func classify(present bool, own net.HardwareAddr, self string, macs []net.HardwareAddr, known func(net.HardwareAddr) (string, bool)) floating.Observation {
	if present {
		return floating.Observation{Kind: floating.HolderSelf, ID: own.String(), Member: self}
	}
	if len(macs) == 0 {
		return floating.Observation{Kind: floating.HolderNone}
	}
	ids := make([]string, len(macs))
	member := ""
	foreign := false
	for i, m := range macs {
		ids[i] = m.String()
		name, ok := "", false
		if known != nil {
			name, ok = known(m)
		}
		switch {
		case !ok:
			foreign = true
		case member == "":
			member = name
		}
	}
	id := strings.Join(ids, ",")
	if foreign {
		return floating.Observation{Kind: floating.HolderForeign, ID: id}
	}
	return floating.Observation{Kind: floating.HolderMember, ID: id, Member: member}
}

// addMAC appends m to macs unless it is there already.
func addMAC(macs []net.HardwareAddr, m net.HardwareAddr) []net.HardwareAddr {
	if slices.ContainsFunc(macs, func(x net.HardwareAddr) bool { return string(x) == string(m) }) {
		return macs
	}
	return append(macs, slices.Clone(m))
}
