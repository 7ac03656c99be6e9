package azure

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/otopcua/otopcua/floating"
)

// Config is one node's Azure executor.
type Config struct {
	// Self is this node's id (host:port), reported in observations.
	Self string
	// Subscription and ResourceGroup hold the members' NICs. Required.
	Subscription, ResourceGroup string
	// NIC is the name of this node's NIC in ResourceGroup. Required.
	NIC string
	// Address is the floating address. Required.
	Address netip.Prefix
	// Cloud is the Azure cloud. Default: the public cloud.
	Cloud cloud.Configuration
	// Endpoint overrides the Resource Manager URL of Cloud ("" keeps it).
	Endpoint string
	// Credential authorizes the requests. Default: azidentity's
	// DefaultAzureCredential (environment, workload and managed identity,
	// the CLI's login).
	Credential azcore.TokenCredential
	// Transport sends the requests. Default: azcore's.
	Transport policy.Transporter
	// Fence is the local ownership-epoch fence. Required.
	Fence *floating.FileFence
	// Known maps another member's NIC name (in ResourceGroup) to its node
	// id; a NIC it does not know is foreign. Default: none known.
	Known func(resourceID string) (member string, ok bool)
	// PollInterval is the period of the reads that wait for a NIC's
	// provisioningState to leave Updating. Default 1 s.
	PollInterval time.Duration
	// Now is the clock of observations. Default time.Now.
	Now func() time.Time
}

// Executor applies floating-address plans on Azure. Its methods are called
// from one goroutine, never concurrently (floating.Executor).
type Executor struct {
	cfg Config
	arm *armClient
	ip  string
}

var _ floating.Executor = (*Executor)(nil)

// New checks cfg and builds its executor.
func New(cfg Config) (*Executor, error) {
	switch {
	case cfg.Subscription == "" || cfg.ResourceGroup == "" || cfg.NIC == "":
		return nil, errors.New("floating/azure: Subscription, ResourceGroup and NIC are required")
	case !cfg.Address.IsValid():
		return nil, errors.New("floating/azure: Address is required")
	case cfg.Fence == nil:
		return nil, errors.New("floating/azure: Fence is required")
	}
	cfg = cfg.withDefaults()
	if cfg.Credential == nil {
		cred, err := azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{ClientOptions: policy.ClientOptions{Cloud: cfg.Cloud}})
		if err != nil {
			return nil, fmt.Errorf("floating/azure: credential chain: %w", err)
		}
		cfg.Credential = cred
	}
	client, err := arm.NewClient("otopcua-floating", "v1.0.0", cfg.Credential, &arm.ClientOptions{
		ClientOptions:         policy.ClientOptions{Cloud: cfg.Cloud, Transport: cfg.Transport},
		DisableRPRegistration: true,
	})
	if err != nil {
		return nil, fmt.Errorf("floating/azure: %w", err)
	}
	base := fmt.Sprintf("%s/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Network/networkInterfaces",
		strings.TrimRight(client.Endpoint(), "/"), cfg.Subscription, cfg.ResourceGroup)
	return &Executor{cfg: cfg, arm: &armClient{pipeline: client.Pipeline(), base: base}, ip: cfg.Address.Addr().String()}, nil
}

func (c Config) withDefaults() Config {
	if c.Cloud.Services == nil {
		c.Cloud = cloud.AzurePublic
	}
	if c.Endpoint != "" {
		rm := c.Cloud.Services[cloud.ResourceManager]
		rm.Endpoint = c.Endpoint
		services := map[cloud.ServiceName]cloud.ServiceConfiguration{}
		for k, v := range c.Cloud.Services {
			services[k] = v
		}
		services[cloud.ResourceManager] = rm
		c.Cloud.Services = services
	}
	if c.Known == nil {
		c.Known = func(string) (string, bool) { return "", false }
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Provider is floating.ProviderAzure.
func (e *Executor) Provider() floating.Provider { return floating.ProviderAzure }

// Apply checks the whole plan, admits its epoch into the local fence (a
// stale plan is refused before any request), then runs each action; the
// first failure stops the plan.
func (e *Executor) Apply(ctx context.Context, p floating.Plan) error {
	if p.Provider != floating.ProviderAzure {
		return fmt.Errorf("floating/azure: plan for provider %q", p.Provider)
	}
	for i, a := range p.Actions {
		if err := e.checkAction(p.Intent.Epoch, a); err != nil {
			return fmt.Errorf("floating/azure: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	if err := e.cfg.Fence.Admit(p.Intent.Epoch); err != nil {
		return err
	}
	for i, a := range p.Actions {
		var err error
		if a.Op == floating.OpAzureAdd {
			err = e.add(ctx, a.Epoch, a.Params["ip-configuration"])
		} else {
			target, _ := e.nicName(a.Target)
			err = e.remove(ctx, a.Epoch, target)
		}
		if err != nil {
			return fmt.Errorf("floating/azure: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	return nil
}

func (e *Executor) checkAction(epoch uint64, a floating.Action) error {
	if a.Epoch != epoch {
		return fmt.Errorf("carries epoch %d in a plan of epoch %d", a.Epoch, epoch)
	}
	if s := a.Params["address"]; s != "" && strings.Split(s, "/")[0] != e.ip {
		return fmt.Errorf("address %s is not the floating address %s", s, e.ip)
	}
	target, err := e.nicName(a.Target)
	if err != nil {
		return err
	}
	switch a.Op {
	case floating.OpAzureAdd:
		if target != "" && !strings.EqualFold(target, e.cfg.NIC) {
			return fmt.Errorf("adds to %s, not this node's NIC %s", a.Target, e.cfg.NIC)
		}
		if a.Params["ip-configuration"] == "" {
			return errors.New(`no "ip-configuration" name`)
		}
		return nil
	case floating.OpAzureRemove:
		return nil
	}
	return errors.New("unknown op for azure")
}

// nicName is the NIC name an action's Target gives: "" (none), a name, or
// the NIC's full resource id, which must lie in this executor's
// subscription and resource group (compared without case, as ARM does).
func (e *Executor) nicName(target string) (string, error) {
	if !strings.HasPrefix(target, "/") {
		return target, nil
	}
	p := strings.Split(strings.Trim(target, "/"), "/")
	if len(p) != 8 || !strings.EqualFold(p[0], "subscriptions") || !strings.EqualFold(p[2], "resourceGroups") ||
		!strings.EqualFold(p[4], "providers") || !strings.EqualFold(p[5], "Microsoft.Network") || !strings.EqualFold(p[6], "networkInterfaces") {
		return "", fmt.Errorf("target %s is not a NIC resource id", target)
	}
	if !strings.EqualFold(p[1], e.cfg.Subscription) || !strings.EqualFold(p[3], e.cfg.ResourceGroup) {
		return "", fmt.Errorf("target %s is outside subscription %s, resource group %s", target, e.cfg.Subscription, e.cfg.ResourceGroup)
	}
	return p[7], nil
}
