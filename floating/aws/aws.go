package aws

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/otopcua/otopcua/floating"
)

// DefaultMetadataEndpoint is the instance metadata service of an EC2
// instance.
const DefaultMetadataEndpoint = "http://169.254.169.254"

// Config is one node's AWS executor.
type Config struct {
	// Self is this node's id (host:port), reported in observations.
	Self string
	// ENI is this node's network interface id (eni-…), the one that takes
	// the address. Required.
	ENI string
	// MAC is ENI's MAC address, the key of instance metadata. Default: read
	// from DescribeNetworkInterfaces once.
	MAC string
	// Address is the floating address. Required, IPv4.
	Address netip.Prefix
	// Region is the EC2 region (us-east-1, …). Default: the credential
	// chain's region.
	Region string
	// Endpoint is the EC2 API URL: set it only for a VPC endpoint or a
	// test fake. Default: the region's regional endpoint, from the SDK's
	// partition data.
	Endpoint string
	// MetadataEndpoint is the instance metadata service URL. Default
	// DefaultMetadataEndpoint.
	MetadataEndpoint string
	// VPC, when set, limits Observe to interfaces of that VPC (vpc-…).
	VPC string
	// Credentials sign the requests. Default: the SDK's chain
	// (environment, shared files, the instance profile).
	Credentials awssdk.CredentialsProvider
	// Fence is the local ownership-epoch fence. Required.
	Fence *floating.FileFence
	// Known maps another member's ENI id to its node id; an ENI it does not
	// know is foreign. Default: none known.
	Known func(resourceID string) (member string, ok bool)
	// HTTPClient sends the requests. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
	// PollInterval is the period of aws-confirm-metadata. Default 250 ms.
	PollInterval time.Duration
	// Now is the clock for signatures and observation times. Default
	// time.Now.
	Now func() time.Time
}

// Executor applies floating-address plans on AWS. Its methods are called
// from one goroutine, never concurrently (floating.Executor).
type Executor struct {
	cfg  Config
	ec2  *ec2Client
	imds *imdsClient
	ip   string
	mac  string
}

var _ floating.Executor = (*Executor)(nil)

// New checks cfg and builds its executor; with no Credentials it loads the
// SDK's default chain (which reads files and the environment, no request).
func New(cfg Config) (*Executor, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.Credentials == nil || cfg.Region == "" {
		sdk, err := awsconfig.LoadDefaultConfig(context.Background())
		if err != nil {
			return nil, fmt.Errorf("floating/aws: credential chain: %w", err)
		}
		if cfg.Credentials == nil {
			cfg.Credentials = sdk.Credentials
		}
		if cfg.Region == "" {
			cfg.Region = sdk.Region
		}
	}
	if cfg.Region == "" {
		return nil, errors.New("floating/aws: Region is not set and the credential chain names none")
	}
	if cfg.Endpoint == "" {
		ep, err := defaultEndpoint(cfg.Region)
		if err != nil {
			return nil, err
		}
		cfg.Endpoint = ep
	}
	return &Executor{
		cfg: cfg,
		ec2: &ec2Client{
			endpoint: strings.TrimRight(cfg.Endpoint, "/") + "/",
			region:   cfg.Region,
			creds:    awssdk.NewCredentialsCache(cfg.Credentials),
			http:     cfg.HTTPClient,
			signer:   v4.NewSigner(),
			now:      cfg.Now,
		},
		imds: &imdsClient{endpoint: strings.TrimRight(cfg.MetadataEndpoint, "/"), http: cfg.HTTPClient},
		ip:   cfg.Address.Addr().String(),
		mac:  strings.ToLower(cfg.MAC),
	}, nil
}

func (c Config) check() error {
	switch {
	case c.ENI == "":
		return errors.New("floating/aws: ENI (this node's network interface id) is required")
	case !c.Address.IsValid() || !c.Address.Addr().Is4():
		return fmt.Errorf("floating/aws: Address %v: an IPv4 address is required (a secondary private IP of the ENI)", c.Address)
	case c.Fence == nil:
		return errors.New("floating/aws: Fence is required")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.MetadataEndpoint == "" {
		c.MetadataEndpoint = DefaultMetadataEndpoint
	}
	if c.Known == nil {
		c.Known = func(string) (string, bool) { return "", false }
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 250 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Provider is floating.ProviderAWS.
func (e *Executor) Provider() floating.Provider { return floating.ProviderAWS }

// Apply runs p's actions in order. It checks the whole plan first, then
// admits its epoch into the local fence (a stale plan is refused before any
// request), then runs each action; the first failure stops the plan.
func (e *Executor) Apply(ctx context.Context, p floating.Plan) error {
	if err := e.check(p); err != nil {
		return err
	}
	if err := e.cfg.Fence.Admit(p.Intent.Epoch); err != nil {
		return err
	}
	for i, a := range p.Actions {
		if err := e.apply(ctx, a); err != nil {
			return fmt.Errorf("floating/aws: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	return nil
}

// check refuses a plan this executor cannot run, before anything is sent.
func (e *Executor) check(p floating.Plan) error {
	if p.Provider != floating.ProviderAWS {
		return fmt.Errorf("floating/aws: plan for provider %q", p.Provider)
	}
	for i, a := range p.Actions {
		if err := e.checkAction(p.Intent.Epoch, a); err != nil {
			return fmt.Errorf("floating/aws: action %d/%d %s: %w", i+1, len(p.Actions), a.Op, err)
		}
	}
	return nil
}

func (e *Executor) checkAction(epoch uint64, a floating.Action) error {
	if a.Epoch != epoch {
		return fmt.Errorf("carries epoch %d in a plan of epoch %d", a.Epoch, epoch)
	}
	if a.Target != "" && a.Target != e.cfg.ENI {
		return fmt.Errorf("targets %s, not this node's ENI %s", a.Target, e.cfg.ENI)
	}
	if err := e.checkAddress(a.Params["address"]); err != nil {
		return err
	}
	switch a.Op {
	case floating.OpAWSAssign:
		_, err := strconv.ParseBool(a.Params["allow-reassignment"])
		return err
	case floating.OpAWSConfirm:
		_, err := time.ParseDuration(a.Params["timeout"])
		return err
	case floating.OpAWSUnassign:
		return nil
	}
	return fmt.Errorf("unknown op for aws")
}

// checkAddress accepts the configured address, as an address or a prefix
// ("" means the configured one).
func (e *Executor) checkAddress(s string) error {
	if s == "" {
		return nil
	}
	addr, err := netip.ParseAddr(s)
	if err != nil {
		p, perr := netip.ParsePrefix(s)
		if perr != nil {
			return fmt.Errorf("address %q: %w", s, err)
		}
		addr = p.Addr()
	}
	if addr.String() != e.ip {
		return fmt.Errorf("address %s is not the floating address %s", addr, e.ip)
	}
	return nil
}

func (e *Executor) apply(ctx context.Context, a floating.Action) error {
	switch a.Op {
	case floating.OpAWSAssign:
		allow, _ := strconv.ParseBool(a.Params["allow-reassignment"])
		return e.assign(ctx, a.Epoch, allow)
	case floating.OpAWSConfirm:
		timeout, _ := time.ParseDuration(a.Params["timeout"])
		return e.confirm(ctx, timeout)
	default:
		return e.unassign(ctx, a.Epoch)
	}
}

// defaultEndpoint is the regional EC2 endpoint of region: "ec2.", the
// region and the DNS suffix of the region's partition, which the SDK's
// partition data gives through the STS endpoint resolver (STS is linked
// anyway: the credential chain assumes roles with it).
func defaultEndpoint(region string) (string, error) {
	if region == "" {
		return "", errors.New("floating/aws: no region to find the EC2 endpoint of")
	}
	ep, err := sts.NewDefaultEndpointResolverV2().ResolveEndpoint(context.Background(), sts.EndpointParameters{Region: &region})
	if err != nil {
		return "", fmt.Errorf("floating/aws: no endpoint known for region %q (set Endpoint): %w", region, err)
	}
	_, suffix, ok := strings.Cut(ep.URI.Hostname(), "sts."+region+".")
	if !ok || suffix == "" {
		return "", fmt.Errorf("floating/aws: no regional endpoint known for region %q (set Endpoint)", region)
	}
	return "https://ec2." + region + "." + suffix, nil
}
