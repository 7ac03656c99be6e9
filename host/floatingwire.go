package host

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"github.com/otopcua/otopcua/cluster/membership"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/floating"
	floataws "github.com/otopcua/otopcua/floating/aws"
	floatazure "github.com/otopcua/otopcua/floating/azure"
	floatlinux "github.com/otopcua/otopcua/floating/linux"
	floatoci "github.com/otopcua/otopcua/floating/oci"
)

// FloatingFenceFile is the file, beside OpcUa:Security:PkiDir, that keeps
// the last ownership epoch this node applied to its floating address.
const FloatingFenceFile = "floating-epoch"

// floatingPart is the floating address's executor, made before the OPC UA
// endpoint opens so that a leftover address from this node's previous run
// is removed first: a restarting node never answers on the floating
// address while it is not its owner.
type floatingPart struct {
	exec     floating.Executor
	target   floating.Target
	holderID string
	address  netip.Prefix
	// known maps a holder id seen by the executor to a member; the
	// runtime installs it once it runs.
	known func(id string) (string, bool)
	rt    *floatingRuntime
}

// prepareFloating builds the executor and removes a leftover address.
func (n *wiring) prepareFloating() (func() error, error) {
	fc := n.cfg.Redundancy.FloatingAddress
	if fc.Address == "" {
		return nil, nil
	}
	addr, err := netip.ParsePrefix(fc.Address)
	if err != nil {
		return nil, fmt.Errorf("Redundancy:FloatingAddress:Address %q: %w", fc.Address, err)
	}
	fence, err := floating.OpenFileFence(filepath.Join(filepath.Dir(filepath.Clean(n.cfg.OpcUa.Security.PkiDir)), FloatingFenceFile))
	if err != nil {
		return nil, err
	}
	fp := &floatingPart{address: addr}
	fp.known = func(string) (string, bool) { return "", false }
	lookup := func(id string) (string, bool) { return fp.known(id) }
	target := floating.Target{Provider: floating.Provider(fc.Provider)}
	switch floating.Provider(fc.Provider) {
	case floating.ProviderLinux:
		e, hw, err := linuxExecutor(fc, addr, fence, n.cfg.Cluster.NodeID(), lookup)
		if err != nil {
			return nil, err
		}
		fp.exec, fp.holderID = e, hw
		target.Interface, target.AnnounceCount, target.AnnounceInterval = fc.Interface, fc.AnnounceCount, fc.AnnounceInterval
		ctx, cancel := context.WithTimeout(n.ctx, 10*time.Second)
		removed, err := e.RemoveIfPresent(ctx)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("floating address: remove a leftover %s from %s: %w", addr, fc.Interface, err)
		}
		if removed {
			n.log.Warn("floating address: removed a leftover from this node's previous run before the OPC UA endpoint opens", "address", addr.String(), "interface", fc.Interface)
		}
	case floating.ProviderAWS:
		e, err := floataws.New(floataws.Config{Self: n.cfg.Cluster.NodeID(), ENI: fc.Aws.NetworkInterfaceId, Address: addr,
			Region: fc.Aws.Region, Endpoint: fc.Aws.Endpoint, MetadataEndpoint: fc.Aws.MetadataEndpoint, Fence: fence, Known: lookup})
		if err != nil {
			return nil, err
		}
		fp.exec, fp.holderID = e, fc.Aws.NetworkInterfaceId
		target.NetworkInterfaceID, target.ConfirmTimeout = fc.Aws.NetworkInterfaceId, fc.Aws.ConfirmTimeout
	case floating.ProviderOCI:
		e, err := floatoci.New(floatoci.Config{Self: n.cfg.Cluster.NodeID(), VNIC: fc.Oci.VnicId, Address: addr,
			Endpoint: fc.Oci.Endpoint, Fence: fence, Known: lookup})
		if err != nil {
			return nil, err
		}
		fp.exec, fp.holderID = e, fc.Oci.VnicId
		target.VnicID = fc.Oci.VnicId
	case floating.ProviderAzure:
		e, err := floatazure.New(floatazure.Config{Self: n.cfg.Cluster.NodeID(), Subscription: fc.Azure.SubscriptionId,
			ResourceGroup: fc.Azure.ResourceGroup, NIC: fc.Azure.NetworkInterface, Address: addr, Endpoint: fc.Azure.Endpoint,
			Fence: fence, Known: lookup})
		if err != nil {
			return nil, err
		}
		// Observations name a NIC by its name: so do the heartbeats.
		name := fc.Azure.NetworkInterface
		if i := strings.LastIndex(name, "/"); i >= 0 {
			name = name[i+1:]
		}
		fp.exec, fp.holderID = e, name
		target.NIC, target.IPConfiguration = fc.Azure.NetworkInterface, fc.Azure.IpConfiguration
	default:
		return nil, fmt.Errorf("Redundancy:FloatingAddress:Provider %q: accepted values are linux, aws, oci, azure", fc.Provider)
	}
	fp.target = target
	n.floating = fp
	return func() error {
		if c, ok := fp.exec.(interface{ Close() }); ok {
			c.Close()
		}
		return nil
	}, nil
}

func linuxExecutor(fc config.FloatingAddressConfig, addr netip.Prefix, fence *floating.FileFence, self string,
	known func(string) (string, bool)) (*floatlinux.Executor, string, error) {
	ifc, err := net.InterfaceByName(fc.Interface)
	if err != nil {
		return nil, "", fmt.Errorf("Redundancy:FloatingAddress:Interface %q: %w", fc.Interface, err)
	}
	// The responder answers for the address only while the loop renews its
	// hold (every successful heartbeat, for HeartbeatTtl): a frozen node
	// falls silent well before its peer may take the address for
	// staleness (HeartbeatTtl + PromotionHold of stream time).
	e, err := floatlinux.New(floatlinux.Config{Interface: fc.Interface, Address: addr, Fence: fence, Self: self, Hold: fc.HeartbeatTtl,
		Known: func(mac net.HardwareAddr) (string, bool) { return known(mac.String()) }})
	if err != nil {
		return nil, "", err
	}
	return e, ifc.HardwareAddr.String(), nil
}

// startFloating runs the floating address's loop; it stops (releasing the
// address this node holds) before the redundancy runtime.
func (n *wiring) startFloating() (func() error, error) {
	fp := n.floating
	if fp == nil {
		return nil, nil
	}
	fc := n.cfg.Redundancy.FloatingAddress
	m, err := newFloatingMetrics(n.metrics.Meter(), n.cfg.Node.ClusterId)
	if err != nil {
		return nil, err
	}
	rt := newFloatingRuntime(floatingOptions{
		ClusterID: n.cfg.Node.ClusterId, Self: n.cfg.Cluster.NodeID(), Address: fp.address,
		Params: floating.Params{AutoFailover: fc.AutoFailover, HeartbeatTTL: fc.HeartbeatTtl, PromotionHold: fc.PromotionHold,
			LicenceRequired: n.cfg.Cluster.SplitBrainResolverStrategy == config.StrategyLeaseMajority},
		Interval: fc.HeartbeatInterval, Reconcile: fc.ReconcileInterval, Target: fp.target, Exec: fp.exec, HolderID: fp.holderID,
		DB: n.db, Members: n.cluster.d.Snapshot, View: n.red.view, Level: n.shown.Last,
		Draining: func() bool { return n.pins.get().Drain || leavingCluster(n.cluster.d.Snapshot()) },
		Clock:    n.tree.Clock(), Metrics: m, Log: n.log.With("part", "floating address"),
	})
	fp.known = rt.known
	fp.rt = rt
	n.backend.floating = rt.panel
	rt.start()
	return quiet(rt.shutdown), nil
}

// handOverFloating gives the floating address up before a graceful leave,
// so that the next Primary takes it before this node's OPC UA endpoint
// closes.
func (n *wiring) handOverFloating() {
	if fp := n.floating; fp != nil && fp.rt != nil {
		fp.rt.handOver(floatingHandOverTimeout)
	}
}

// opcuaListenHost is the address the OPC UA endpoint binds: Cluster:Hostname,
// except that with a floating address (floatingAddress, a CIDR; "" for none)
// a Hostname that names one address (an IP or a host name) is widened to
// the unspecified address of the floating address's family ("0.0.0.0",
// "::"). A socket bound to the node's own address never accepts a
// connection to the floating address that the node's loopback carries
// while it holds it, so the clients of the floating URL would be refused.
// A Hostname that is already unspecified is kept.
func opcuaListenHost(hostname, floatingAddress string) string {
	if floatingAddress == "" {
		return hostname
	}
	if own, err := netip.ParseAddr(hostname); err == nil && own.IsUnspecified() {
		return hostname
	}
	fa, err := netip.ParsePrefix(floatingAddress)
	if err != nil {
		return hostname
	}
	if fa.Addr().Is4() {
		return "0.0.0.0"
	}
	return "::"
}

// floatingHandOverTimeout bounds the wait for the release before a leave.
const floatingHandOverTimeout = 3 * time.Second

// leavingCluster: this node is Leaving or Exiting in st.
func leavingCluster(st membership.State) bool {
	self, ok := st.SelfMember()
	return ok && (self.Status == membership.Leaving || self.Status == membership.Exiting)
}
