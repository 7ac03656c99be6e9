package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"

	"github.com/otopcua/otopcua/floating"
)

// Config is one node's OCI executor.
type Config struct {
	// Self is this node's id (host:port), reported in observations.
	Self string
	// VNIC is this node's VNIC OCID, the one that takes the address.
	// Required.
	VNIC string
	// Subnet is the OCID of the subnet the address belongs to. Default: the
	// subnet of VNIC, read with GetVnic once.
	Subnet string
	// Address is the floating address. Required.
	Address netip.Prefix
	// Endpoint is the Core Services API URL. Default: the region's, from
	// the Credentials' region.
	Endpoint string
	// Credentials sign the requests. Default: the SDK's default provider
	// (the config file and OCI_ environment variables).
	Credentials common.ConfigurationProvider
	// Fence is the local ownership-epoch fence. Required.
	Fence *floating.FileFence
	// Known maps another member's VNIC OCID to its node id; a VNIC it does
	// not know is foreign. Default: none known.
	Known func(resourceID string) (member string, ok bool)
	// HTTPClient sends the requests. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
	// Now is the clock of the Date header and observations. Default
	// time.Now.
	Now func() time.Time
}

// Executor applies floating-address plans on OCI. Its methods are called
// from one goroutine, never concurrently (floating.Executor).
type Executor struct {
	cfg Config
	api *client
	ip  string
}

var _ floating.Executor = (*Executor)(nil)

// New checks cfg and builds its executor.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.VNIC == "":
		return nil, errors.New("floating/oci: VNIC (this node's VNIC OCID) is required")
	case !cfg.Address.IsValid() || !cfg.Address.Addr().Is4():
		return nil, fmt.Errorf("floating/oci: Address %v: an IPv4 address is required (a secondary private IP of the VNIC)", cfg.Address)
	case cfg.Fence == nil:
		return nil, errors.New("floating/oci: Fence is required")
	}
	if cfg.Credentials == nil {
		cfg.Credentials = common.DefaultConfigProvider()
	}
	if cfg.Endpoint == "" {
		region, err := cfg.Credentials.Region()
		if err != nil {
			return nil, fmt.Errorf("floating/oci: no Endpoint and no region in the credentials: %w", err)
		}
		cfg.Endpoint = "https://" + common.StringToRegion(region).Endpoint("iaas")
	}
	if cfg.Known == nil {
		cfg.Known = func(string) (string, bool) { return "", false }
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Executor{
		cfg: cfg,
		api: &client{
			endpoint: strings.TrimRight(cfg.Endpoint, "/"),
			signer:   common.DefaultRequestSigner(cfg.Credentials),
			http:     cfg.HTTPClient,
			now:      cfg.Now,
		},
		ip: cfg.Address.Addr().String(),
	}, nil
}

// Provider is floating.ProviderOCI.
func (e *Executor) Provider() floating.Provider { return floating.ProviderOCI }

// Apply checks the whole plan, admits its epoch into the local fence (a
// stale plan is refused before any request), then runs each action; the
// first failure stops the plan.
func (e *Executor) Apply(ctx context.Context, p floating.Plan) error {
	if p.Provider != floating.ProviderOCI {
		return fmt.Errorf("floating/oci: plan for provider %q", p.Provider)
	}
	for i, a := range p.Actions {
		if err := e.checkAction(p.Intent.Epoch, a); err != nil {
			return fmt.Errorf("floating/oci: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	if err := e.cfg.Fence.Admit(p.Intent.Epoch); err != nil {
		return err
	}
	for i, a := range p.Actions {
		var err error
		if a.Op == floating.OpOCIAssign {
			force, _ := strconv.ParseBool(a.Params["unassign-if-already-assigned"])
			err = e.assign(ctx, a.Epoch, force)
		} else {
			err = e.unassign(ctx, a.Epoch)
		}
		if err != nil {
			return fmt.Errorf("floating/oci: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	return nil
}

func (e *Executor) checkAction(epoch uint64, a floating.Action) error {
	if a.Epoch != epoch {
		return fmt.Errorf("carries epoch %d in a plan of epoch %d", a.Epoch, epoch)
	}
	if a.Target != "" && a.Target != e.cfg.VNIC {
		return fmt.Errorf("targets %s, not this node's VNIC %s", a.Target, e.cfg.VNIC)
	}
	if s := a.Params["address"]; s != "" && strings.Split(s, "/")[0] != e.ip {
		return fmt.Errorf("address %s is not the floating address %s", s, e.ip)
	}
	switch a.Op {
	case floating.OpOCIAssign:
		_, err := strconv.ParseBool(a.Params["unassign-if-already-assigned"])
		return err
	case floating.OpOCIUnassign:
		return nil
	}
	return errors.New("unknown op for oci")
}

// find returns the private IP object of the address (ok false: none).
func (e *Executor) find(ctx context.Context) (privateIP, bool, error) {
	if e.cfg.Subnet == "" {
		subnet, err := e.api.subnetOf(ctx, e.cfg.VNIC)
		if err != nil {
			return privateIP{}, false, err
		}
		e.cfg.Subnet = subnet
	}
	ips, err := e.api.list(ctx, url.Values{"subnetId": {e.cfg.Subnet}, "ipAddress": {e.ip}})
	if err != nil || len(ips) == 0 {
		return privateIP{}, false, err
	}
	return ips[0], true, nil
}

// assign is oci-assign-private-ip.
func (e *Executor) assign(ctx context.Context, epoch uint64, force bool) error {
	found, ok, err := e.find(ctx)
	if err != nil {
		return err
	}
	if !ok {
		err := e.api.create(ctx, privateIP{VnicID: e.cfg.VNIC, IPAddress: e.ip, FreeformTags: privateIP{}.withEpoch(epoch)})
		if isStatus(err, http.StatusConflict) {
			return fmt.Errorf("%w: %w", floating.ErrConflict, err)
		}
		return err
	}
	p, etag, err := e.api.get(ctx, found.ID)
	if err != nil {
		return err
	}
	if last := p.epoch(); last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	if err := e.mayTake(p, force); err != nil {
		return err
	}
	if p.VnicID == e.cfg.VNIC && p.epoch() == epoch {
		return nil
	}
	return e.api.update(ctx, p.ID, etag, privateIP{VnicID: e.cfg.VNIC, FreeformTags: p.withEpoch(epoch)})
}

// mayTake refuses to take p from a foreign VNIC, a VNIC's primary IP, or a
// member's VNIC without unassign-if-already-assigned.
func (e *Executor) mayTake(p privateIP, force bool) error {
	if p.VnicID == e.cfg.VNIC {
		return nil
	}
	if p.IsPrimary {
		return fmt.Errorf("%w: %s is the primary IP of VNIC %s, never moved", floating.ErrConflict, e.ip, p.VnicID)
	}
	if _, ok := e.cfg.Known(p.VnicID); !ok {
		return fmt.Errorf("%w: %s is held by foreign VNIC %s, never taken", floating.ErrConflict, e.ip, p.VnicID)
	}
	if !force {
		return fmt.Errorf("%w: %s is assigned to VNIC %s and the action does not unassign it", floating.ErrConflict, e.ip, p.VnicID)
	}
	return nil
}

// unassign is oci-unassign-private-ip.
func (e *Executor) unassign(ctx context.Context, epoch uint64) error {
	found, ok, err := e.find(ctx)
	if err != nil || !ok || found.VnicID != e.cfg.VNIC {
		return err
	}
	p, etag, err := e.api.get(ctx, found.ID)
	if err != nil {
		return err
	}
	if last := p.epoch(); last > epoch {
		return &floating.StaleEpochError{Plan: epoch, Last: last}
	}
	if p.IsPrimary {
		return fmt.Errorf("%s is the primary IP of this node's VNIC and is never deleted", e.ip)
	}
	err = e.api.delete(ctx, p.ID, etag)
	if isStatus(err, http.StatusNotFound) {
		return nil
	}
	return err
}

// Observe reports which VNIC holds the address.
func (e *Executor) Observe(ctx context.Context) (floating.Observation, error) {
	p, ok, err := e.find(ctx)
	if err != nil {
		return floating.Observation{}, fmt.Errorf("floating/oci: observe: %w", err)
	}
	o := floating.Observation{Kind: floating.HolderNone, At: e.cfg.Now()}
	if !ok {
		return o, nil
	}
	o.ID = p.VnicID
	switch member, known := e.cfg.Known(o.ID); {
	case o.ID == e.cfg.VNIC:
		o.Kind, o.Member = floating.HolderSelf, e.cfg.Self
	case known:
		o.Kind, o.Member = floating.HolderMember, member
	default:
		o.Kind = floating.HolderForeign
	}
	return o, nil
}
