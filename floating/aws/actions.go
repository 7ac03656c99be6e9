package aws

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/otopcua/otopcua/floating"
)

// assign takes the address onto this node's ENI (aws-assign-private-ip).
func (e *Executor) assign(ctx context.Context, epoch uint64, allow bool) error {
	own, err := e.ec2.describeByID(ctx, e.cfg.ENI)
	if err != nil {
		return err
	}
	e.learnMAC(own)
	holders, err := e.ec2.describeHolders(ctx, e.ip, e.cfg.VPC)
	if err != nil {
		return err
	}
	last, others, err := e.fenceOf(own, holders)
	if err != nil {
		return err
	}
	if last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	if len(others) == 0 && own.lists(e.ip) {
		return e.retag(ctx, own, epoch)
	}
	stamp := []string{own.ID}
	if allow {
		// The holders this assign takes the address from.
		stamp = append(stamp, others...)
	}
	if err := e.ec2.tagEpoch(ctx, epoch, stamp...); err != nil {
		return err
	}
	err = e.ec2.assign(ctx, own.ID, e.ip, allow)
	var api *APIError
	if errors.As(err, &api) && api.Code == "PrivateIpAddressInUse" {
		return fmt.Errorf("%w: %w", floating.ErrConflict, err)
	}
	return err
}

// fenceOf returns the highest epoch tag of own and the holders, and the
// holders other than own; a holder that is no known member is a conflict.
func (e *Executor) fenceOf(own eni, holders []eni) (uint64, []string, error) {
	last := own.epoch()
	var others []string
	for _, h := range holders {
		if h.ID == own.ID {
			continue
		}
		if _, ok := e.cfg.Known(h.ID); !ok {
			return 0, nil, fmt.Errorf("%w: %s is held by foreign interface %s, never taken", floating.ErrConflict, e.ip, h.ID)
		}
		last = max(last, h.epoch())
		others = append(others, h.ID)
	}
	return last, others, nil
}

// retag records epoch on own when it carries an older one.
func (e *Executor) retag(ctx context.Context, own eni, epoch uint64) error {
	if own.epoch() == epoch {
		return nil
	}
	return e.ec2.tagEpoch(ctx, epoch, own.ID)
}

func (e *Executor) learnMAC(own eni) {
	if e.mac == "" {
		e.mac = own.MAC
	}
}

// unassign gives the address up (aws-unassign-private-ip); an ENI that no
// longer lists it has nothing to give up.
func (e *Executor) unassign(ctx context.Context, epoch uint64) error {
	own, err := e.ec2.describeByID(ctx, e.cfg.ENI)
	if err != nil {
		return err
	}
	if last := own.epoch(); last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	for _, a := range own.Addresses {
		if a.IP == e.ip && a.Primary {
			return fmt.Errorf("%s is the primary address of %s and is never unassigned", e.ip, own.ID)
		}
	}
	if err := e.retag(ctx, own, epoch); err != nil {
		return err
	}
	if !own.lists(e.ip) {
		return nil
	}
	err = e.ec2.unassign(ctx, own.ID, e.ip)
	var api *APIError
	if errors.As(err, &api) && api.Code == "InvalidParameterValue" {
		// Moved away meanwhile (a reassign by the new owner): look again.
		again, derr := e.ec2.describeByID(ctx, own.ID)
		if derr == nil && !again.lists(e.ip) {
			return nil
		}
	}
	return err
}

// confirm polls instance metadata until it lists the address on this
// node's ENI, or timeout ends (aws-confirm-metadata).
func (e *Executor) confirm(ctx context.Context, timeout time.Duration) error {
	if e.mac == "" {
		own, err := e.ec2.describeByID(ctx, e.cfg.ENI)
		if err != nil {
			return err
		}
		e.learnMAC(own)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(e.cfg.PollInterval)
	defer tick.Stop()
	var last error
	for {
		ips, err := e.imds.localIPv4s(ctx, e.mac)
		if err == nil && slices.Contains(ips, e.ip) {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("instance metadata of %s (%s) does not list %s after %s (last error: %v)", e.cfg.ENI, e.mac, e.ip, timeout, last)
		case <-tick.C:
		}
	}
}

// Observe reports which ENI lists the address.
func (e *Executor) Observe(ctx context.Context) (floating.Observation, error) {
	holders, err := e.ec2.describeHolders(ctx, e.ip, e.cfg.VPC)
	if err != nil {
		return floating.Observation{}, fmt.Errorf("floating/aws: observe: %w", err)
	}
	o := floating.Observation{Kind: floating.HolderNone, At: e.cfg.Now()}
	if len(holders) == 0 {
		return o, nil
	}
	o.ID = holders[0].ID
	switch member, ok := e.cfg.Known(o.ID); {
	case o.ID == e.cfg.ENI:
		o.Kind, o.Member = floating.HolderSelf, e.cfg.Self
	case ok:
		o.Kind, o.Member = floating.HolderMember, member
	default:
		o.Kind = floating.HolderForeign
	}
	return o, nil
}
