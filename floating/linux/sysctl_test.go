package linux

import (
	"strings"
	"testing"
)

func TestArpWrites(t *testing.T) {
	for _, c := range []struct {
		name             string
		k                arpKeys
		ignore, announce int
		err              string
	}{
		{"kernel defaults", arpKeys{}, 1, 2, ""},
		{"already set on the interface", arpKeys{IfIgnore: 1, IfAnnounce: 2}, -1, -1, ""},
		{"already set on all", arpKeys{AllIgnore: 1, AllAnnounce: 2}, -1, -1, ""},
		{"all 2 covers the interface", arpKeys{AllIgnore: 2, AllAnnounce: 1}, -1, 2, ""},
		{"interface 8 never replies", arpKeys{IfIgnore: 8, IfAnnounce: 2}, -1, -1, ""},
		{"interface 3 answers lo's address", arpKeys{IfIgnore: 3}, 1, 2, ""},
		{"reserved 5 on the interface", arpKeys{IfIgnore: 5}, 1, 2, ""},
		{"all 3 cannot be lowered from the interface", arpKeys{AllIgnore: 3}, -1, -1, "net.ipv4.conf.all.arp_ignore is 3"},
		{"all 3 but the interface never replies", arpKeys{AllIgnore: 3, IfIgnore: 8}, -1, 2, ""},
	} {
		ignore, announce, err := arpWrites(c.k, "eth0")
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one that says %q", c.name, err, c.err)
		case c.err == "" && (ignore != c.ignore || announce != c.announce):
			t.Errorf("%s: writes arp_ignore %d, arp_announce %d; want %d, %d", c.name, ignore, announce, c.ignore, c.announce)
		}
	}
}
