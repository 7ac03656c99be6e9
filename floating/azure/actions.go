package azure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/otopcua/otopcua/floating"
)

// remove is azure-remove-ip-configuration: the holder's NIC written back
// without the address's ipConfiguration and stamped with epoch.
func (e *Executor) remove(ctx context.Context, epoch uint64, target string) error {
	if target == "" {
		holder, ok, err := e.holder(ctx)
		if err != nil || !ok {
			return err
		}
		target = holder.name()
	}
	if _, known := e.cfg.Known(target); !strings.EqualFold(target, e.cfg.NIC) && !known {
		return fmt.Errorf("%w: %s is held by foreign NIC %s, never written", floating.ErrConflict, e.ip, target)
	}
	n, err := e.arm.get(ctx, target)
	if err != nil {
		return err
	}
	if last := n.epoch(); last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	if !n.holds(e.ip) {
		return nil
	}
	kept := []any{}
	for _, c := range n.ipConfigs() {
		ip, primary := configIP(c)
		if ip == e.ip && primary {
			return fmt.Errorf("%s is the primary ipConfiguration of %s and is never removed", e.ip, target)
		}
		if ip != e.ip {
			kept = append(kept, c)
		}
	}
	n.props()["ipConfigurations"] = kept
	n.setEpoch(epoch)
	return e.write(ctx, n)
}

// add is azure-add-ip-configuration: this node's NIC written back with a
// static ipConfiguration named name for the address, stamped with epoch.
func (e *Executor) add(ctx context.Context, epoch uint64, name string) error {
	n, err := e.arm.get(ctx, e.cfg.NIC)
	if err != nil {
		return err
	}
	if last := n.epoch(); last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	if n.holds(e.ip) && n.epoch() == epoch {
		return nil
	}
	if !n.holds(e.ip) {
		props := map[string]any{
			"privateIPAddress":          e.ip,
			"privateIPAllocationMethod": "Static",
			"primary":                   false,
			"subnet":                    map[string]any{"id": n.primarySubnet()},
		}
		if e.cfg.Address.Addr().Is6() {
			props["privateIPAddressVersion"] = "IPv6"
		}
		n.props()["ipConfigurations"] = append(n.ipConfigs(), map[string]any{"name": name, "properties": props})
	}
	n.setEpoch(epoch)
	return e.write(ctx, n)
}

// write PUTs n under If-Match and waits until its provisioning is over.
func (e *Executor) write(ctx context.Context, n nic) error {
	out, err := e.arm.put(ctx, n)
	for err == nil {
		switch out.state() {
		case "Succeeded", "":
			return nil
		case "Failed", "Canceled":
			return fmt.Errorf("NIC %s provisioning %s", n.name(), out.state())
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("NIC %s still %s: %w", n.name(), out.state(), ctx.Err())
		case <-time.After(e.cfg.PollInterval):
		}
		out, err = e.arm.get(ctx, n.name())
	}
	return err
}

// holder is the NIC of the resource group that carries the address.
func (e *Executor) holder(ctx context.Context) (nic, bool, error) {
	nics, err := e.arm.list(ctx)
	if err != nil {
		return nil, false, err
	}
	for _, n := range nics {
		if n.holds(e.ip) {
			return n, true, nil
		}
	}
	return nil, false, nil
}

// Observe reports which NIC of the resource group carries the address.
func (e *Executor) Observe(ctx context.Context) (floating.Observation, error) {
	n, ok, err := e.holder(ctx)
	if err != nil {
		return floating.Observation{}, fmt.Errorf("floating/azure: observe: %w", err)
	}
	o := floating.Observation{Kind: floating.HolderNone, At: e.cfg.Now()}
	if !ok {
		return o, nil
	}
	o.ID = n.name()
	switch member, known := e.cfg.Known(o.ID); {
	case strings.EqualFold(o.ID, e.cfg.NIC):
		o.Kind, o.Member = floating.HolderSelf, e.cfg.Self
	case known:
		o.Kind, o.Member = floating.HolderMember, member
	default:
		o.Kind = floating.HolderForeign
	}
	return o, nil
}
