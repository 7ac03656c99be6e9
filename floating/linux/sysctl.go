package linux

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The kernel's ARP settings for an IPv4 floating address on lo. Linux
// answers ARP on any interface for any local address (arp_ignore 0), so
// with the address on lo the kernel of a frozen or dead process would keep
// answering for it; the responder answers instead. The kernel takes the
// larger of net.ipv4.conf.all.X and net.ipv4.conf.<iface>.X for both keys.
//
//   - arp_ignore 1 (reply only for addresses on the receiving interface),
//     2 (also only to senders in that address's subnet) or 8 (never
//     reply) keep the kernel silent for an address on lo; 0 and 3 (reply
//     for every address not of host scope) do not; 4–7 are reserved and
//     reply like 0.
//   - arp_announce 2: the kernel's own ARP requests name the interface's
//     best address as their sender, never the floating address on lo, so
//     a neighbour's cache never learns the floating address from a node
//     that does not answer for it.
const (
	wantArpIgnore   = 1
	wantArpAnnounce = 2
)

// arpKeys is what the kernel has for the interface and for all.
type arpKeys struct {
	AllIgnore, IfIgnore, AllAnnounce, IfAnnounce int
}

func silentIgnore(v int) bool { return v == 1 || v == 2 || v == 8 }

// arpWrites decides what New writes (-1: leave the key as it is). The
// interface's keys are raised; `all` is never written (it is every
// interface's), so an `all` that makes the kernel answer is an error that
// names it.
func arpWrites(k arpKeys, iface string) (ignore, announce int, err error) {
	ignore, announce = -1, -1
	switch {
	case silentIgnore(max(k.AllIgnore, k.IfIgnore)):
	case k.AllIgnore <= wantArpIgnore:
		ignore = wantArpIgnore
	default:
		return -1, -1, fmt.Errorf("net.ipv4.conf.all.arp_ignore is %d: the kernel would answer ARP on %q for the floating address on lo; set it to 0, 1 or 2 (the executor sets net.ipv4.conf.%s.arp_ignore to 1)", k.AllIgnore, iface, iface)
	}
	if max(k.AllAnnounce, k.IfAnnounce) < wantArpAnnounce {
		announce = wantArpAnnounce
	}
	return ignore, announce, nil
}

// quietARP reads the keys and writes what arpWrites says, in the
// namespace sp (the /proc/sys/net a thread sees is its network
// namespace's).
func quietARP(sp space, iface string) error {
	return sp.run(func() error {
		var k arpKeys
		for _, r := range []struct {
			dst        *int
			dev, field string
		}{{&k.AllIgnore, "all", "arp_ignore"}, {&k.IfIgnore, iface, "arp_ignore"}, {&k.AllAnnounce, "all", "arp_announce"}, {&k.IfAnnounce, iface, "arp_announce"}} {
			v, err := readSysctl(r.dev, r.field)
			if err != nil {
				return err
			}
			*r.dst = v
		}
		ignore, announce, err := arpWrites(k, iface)
		if err != nil {
			return err
		}
		if ignore >= 0 {
			if err := writeSysctl(iface, "arp_ignore", ignore); err != nil {
				return err
			}
		}
		if announce >= 0 {
			return writeSysctl(iface, "arp_announce", announce)
		}
		return nil
	})
}

func sysctlPath(dev, field string) string { return "/proc/sys/net/ipv4/conf/" + dev + "/" + field }

func readSysctl(dev, field string) (int, error) {
	b, err := os.ReadFile(sysctlPath(dev, field))
	if err != nil {
		return 0, fmt.Errorf("read net.ipv4.conf.%s.%s: %w", dev, field, err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("read net.ipv4.conf.%s.%s: %w", dev, field, err)
	}
	return v, nil
}

func writeSysctl(dev, field string, v int) error {
	if err := os.WriteFile(sysctlPath(dev, field), []byte(strconv.Itoa(v)), 0); err != nil {
		return fmt.Errorf("set net.ipv4.conf.%s.%s=%d (so that the kernel does not answer ARP on %q for the floating address on lo): %w", dev, field, v, dev, err)
	}
	return nil
}
