package opcua

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/limits"
	"github.com/otopcua/otopcua/opcua/mirror"
	"github.com/otopcua/otopcua/opcua/subscription"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// Defaults of Config.
const (
	DefaultListenHost      = "0.0.0.0"
	DefaultPort            = 4840
	DefaultApplicationName = "otopcua"
	DefaultProductURI      = "urn:otopcua"
	DefaultProductName     = "otopcua"
	DefaultManufacturer    = "otopcua"
	DefaultSoftwareVersion = "dev"
)

// AnyPort as Config.Port lets the kernel pick a free port (tests, the
// demo); EndpointURL reports the real one after Start.
const AnyPort = -1

// BuildInfo describes the product in Server.ServerStatus.BuildInfo.
type BuildInfo struct {
	// ProductName. Default: "otopcua".
	ProductName string
	// ManufacturerName. Default: "otopcua".
	ManufacturerName string
	// SoftwareVersion, e.g. "1.4.2". Default: "dev".
	SoftwareVersion string
	// BuildNumber, e.g. a commit hash. Default: empty.
	BuildNumber string
	// BuildDate (UTC). Default: zero (the OPC UA null DateTime).
	BuildDate time.Time
}

// Config configures a Server. Zero values take the documented defaults; New
// rejects values that make no sense with an error naming the field and what
// it accepts.
type Config struct {
	// ListenHost is the address the server binds. Default: "0.0.0.0" (every
	// IPv4 interface).
	ListenHost string

	// Port is the TCP port of the opc.tcp endpoint. Default: 4840. AnyPort
	// (-1) lets the kernel pick one.
	Port int

	// PublicHostname is the host clients reach this server by, used in the
	// advertised endpoint URL "opc.tcp://PublicHostname:Port". Default:
	// ListenHost, or the machine's host name when ListenHost is unspecified
	// (0.0.0.0, ::).
	PublicHostname string

	// ApplicationURI identifies this server; it must differ between the
	// servers of a redundant set, which list each other by it. It is also
	// namespace 1. Default: "urn:otopcua:<PublicHostname>:<Port>".
	ApplicationURI string

	// ApplicationName is the human-readable server name. Default: "otopcua".
	ApplicationName string

	// ProductURI identifies the product. Default: "urn:otopcua".
	ProductURI string

	// PeerApplicationURIs are the ApplicationURIs of the other servers of the
	// redundant set, in a fixed order. They follow this server's URI in
	// Server.ServerArray, ServerRedundancy.ServerUriArray and
	// RedundantServerArray. Default: none (a set of one).
	PeerApplicationURIs []string

	// PeerDiscoveryURLs are the endpoint URLs of the peers, in the order of
	// PeerApplicationURIs; FindServers returns them. Optional: empty, or one
	// per peer ("" for a peer whose URL is unknown).
	PeerDiscoveryURLs []string

	// RedundancySupport is the value of
	// Server.ServerRedundancy.RedundancySupport: ua.RedundancySupportWarm,
	// ua.RedundancySupportHot or ua.RedundancySupportHotAndMirrored (the
	// modes otopcua implements). HotAndMirrored needs Mirror, and Mirror
	// needs HotAndMirrored. Default: HotAndMirrored with Mirror, else Warm.
	RedundancySupport ua.RedundancySupport

	// Mirror mirrors the sessions and subscriptions served here to the
	// other members of the redundant set and holds theirs (package
	// opcua/mirror); New attaches it to the subscription engine. The
	// caller keeps its peers current and closes it after Close. Default:
	// nil, no mirroring.
	Mirror *mirror.Member

	// BuildInfo fills Server.ServerStatus.BuildInfo.
	BuildInfo BuildInfo

	// Logger receives the server's logs. Default: slog.Default().
	Logger *slog.Logger

	// Clock drives timestamps, session timeouts and subscription timers.
	// Default: the real clock.
	Clock clockwork.Clock

	// Limits are the OpcUa:Limits bounds (opcua/limits), one value passed
	// as it is to the service layer and to the subscription engine, and
	// published in Server.ServerCapabilities. A zero field takes its
	// default there.
	limits.Limits

	// Further session limits of the service layer, published in
	// Server.ServerCapabilities. Zero takes the service layer's default
	// (uaserver.Default*).

	// MaxContinuationPoints: Browse continuation points per session
	// (ServerCapabilities.MaxBrowseContinuationPoints). Default: 10.
	MaxContinuationPoints int
	// MaxNodesPerTranslate: BrowsePaths of one
	// TranslateBrowsePathsToNodeIds. Default: 10000.
	MaxNodesPerTranslate int
	// MaxNodesPerRegister: nodes of one RegisterNodes. Default: 10000.
	MaxNodesPerRegister int
	// MaxNodesPerMethodCall: MethodsToCall of one Call. Default: 1000.
	MaxNodesPerMethodCall int
	// MaxNodesPerHistoryReadEvents: NodesToRead of one HistoryRead
	// (OperationLimits.MaxNodesPerHistoryReadEvents). Default: 100.
	MaxNodesPerHistoryReadEvents int
	// MaxHistoryEventsPerNode: events of one node's HistoryRead result at
	// most, whatever the client asks; the rest comes with a continuation
	// point (HistoryServerCapabilities.MaxReturnEventValues). Default: 1000.
	MaxHistoryEventsPerNode int
	// MaxNodesPerHistoryReadData: NodesToRead of one HistoryRead of
	// values (OperationLimits.MaxNodesPerHistoryReadData). Default: 100.
	MaxNodesPerHistoryReadData int
	// MaxHistoryValuesPerNode: values (or processed intervals) of one
	// node's HistoryRead result at most; the rest comes with a continuation
	// point (HistoryServerCapabilities.MaxReturnDataValues). Default: 10000.
	MaxHistoryValuesPerNode int
	// MaxHistoryContinuationPoints: HistoryRead continuation points per
	// session; a new one beyond it releases the oldest
	// (ServerCapabilities.MaxHistoryContinuationPoints). Default: 10.
	MaxHistoryContinuationPoints int

	// Security is the secure channel configuration passed to the service
	// layer as it is: endpoints offered, certificate and key, the client
	// certificate check, token lifetimes (see uaserver.Security for each
	// one's meaning and default; ParseEndpoint reads the
	// OpcUa:Security:Policies entries). Default: security None only.
	Security uaserver.Security

	// Identities are the application identities presented instead of this
	// server's own on the connections accepted on their local addresses
	// (the floating address's shared identity), passed to the service
	// layer as they are; see uaserver.Config.Identities. Default: none.
	Identities []uaserver.AddressIdentity

	// Users and rights; see the fields of the same name in uaserver.Config.
	// Authorization nil gives every session every right.
	DisableAnonymous                bool
	Users                           uaserver.Users
	ValidateUserCertificate         func(der []byte) (userName string, err error)
	Authorization                   map[string]uaserver.Rights
	MaxActivationFailuresPerAddress int
	ActivationLockout               time.Duration

	// Subscriptions tunes the subscription engine (intervals, queue
	// sizes); its zero values take the engine's defaults. Its Clock and
	// Logger default to the ones above; its Limits are Config.Limits (New
	// refuses a Config that sets them here instead).
	Subscriptions subscription.Options
}

// withDefaults returns c with every zero field set to its default, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.ListenHost == "" {
		c.ListenHost = DefaultListenHost
	}
	switch {
	case c.Port == 0:
		c.Port = DefaultPort
	case c.Port == AnyPort:
	case c.Port < 0 || c.Port > 65535:
		return c, fmt.Errorf("opcua: Config.Port %d: want 1-65535, or AnyPort (-1)", c.Port)
	}
	if c.PublicHostname == "" {
		c.PublicHostname = c.ListenHost
		if ip := net.ParseIP(c.ListenHost); ip != nil && ip.IsUnspecified() {
			h, err := os.Hostname()
			if err != nil || h == "" {
				h = "localhost"
			}
			c.PublicHostname = h
		}
	}
	if c.ApplicationURI == "" {
		c.ApplicationURI = "urn:otopcua:" + c.PublicHostname
		if c.Port > 0 {
			c.ApplicationURI += ":" + strconv.Itoa(c.Port)
		}
	}
	if c.ApplicationName == "" {
		c.ApplicationName = DefaultApplicationName
	}
	if c.ProductURI == "" {
		c.ProductURI = DefaultProductURI
	}
	if err := c.checkPeers(); err != nil {
		return c, err
	}
	switch c.RedundancySupport {
	case ua.RedundancySupportNone:
		c.RedundancySupport = ua.RedundancySupportWarm
		if c.Mirror != nil {
			c.RedundancySupport = ua.RedundancySupportHotAndMirrored
		}
	case ua.RedundancySupportWarm, ua.RedundancySupportHot, ua.RedundancySupportHotAndMirrored:
	default:
		return c, fmt.Errorf("opcua: Config.RedundancySupport %v: want Warm (%d), Hot (%d) or HotAndMirrored (%d)",
			c.RedundancySupport, ua.RedundancySupportWarm, ua.RedundancySupportHot, ua.RedundancySupportHotAndMirrored)
	}
	switch mirrored := c.RedundancySupport == ua.RedundancySupportHotAndMirrored; {
	case mirrored && c.Mirror == nil:
		return c, fmt.Errorf("opcua: Config.RedundancySupport HotAndMirrored needs Config.Mirror (the member that mirrors the sessions)")
	case !mirrored && c.Mirror != nil:
		return c, fmt.Errorf("opcua: Config.Mirror is set but Config.RedundancySupport is %v: want HotAndMirrored (%d), which clients read to use the mirror",
			c.RedundancySupport, ua.RedundancySupportHotAndMirrored)
	}
	b := &c.BuildInfo
	b.ProductName = orDefault(b.ProductName, DefaultProductName)
	b.ManufacturerName = orDefault(b.ManufacturerName, DefaultManufacturer)
	b.SoftwareVersion = orDefault(b.SoftwareVersion, DefaultSoftwareVersion)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Subscriptions.Clock == nil {
		c.Subscriptions.Clock = c.Clock
	}
	if c.Subscriptions.Logger == nil {
		c.Subscriptions.Logger = c.Logger
	}
	if c.Subscriptions.Limits != (limits.Limits{}) {
		return c, fmt.Errorf("opcua: Config.Subscriptions.Limits is set: set Config.Limits, which the subscription engine takes from there")
	}
	c.Limits = c.Limits.WithDefaults()
	c.Subscriptions.Limits = c.Limits
	defInt(&c.MaxContinuationPoints, uaserver.DefaultMaxContinuationPoints)
	defInt(&c.MaxNodesPerTranslate, uaserver.DefaultMaxNodesPerTranslate)
	defInt(&c.MaxNodesPerRegister, uaserver.DefaultMaxNodesPerRegister)
	defInt(&c.MaxNodesPerMethodCall, uaserver.DefaultMaxNodesPerMethodCall)
	defInt(&c.MaxNodesPerHistoryReadEvents, uaserver.DefaultMaxNodesPerHistoryReadEvents)
	defInt(&c.MaxHistoryEventsPerNode, uaserver.DefaultMaxHistoryEventsPerNode)
	defInt(&c.MaxNodesPerHistoryReadData, uaserver.DefaultMaxNodesPerHistoryReadData)
	defInt(&c.MaxHistoryValuesPerNode, uaserver.DefaultMaxHistoryValuesPerNode)
	defInt(&c.MaxHistoryContinuationPoints, uaserver.DefaultMaxHistoryContinuationPoints)
	c.Subscriptions = c.Subscriptions.Resolved()
	if c.MaxHistoryContinuationPoints > 65535 {
		return c, fmt.Errorf("opcua: Config.MaxHistoryContinuationPoints %d: want at most 65535", c.MaxHistoryContinuationPoints)
	}
	if c.MaxContinuationPoints > 65535 {
		return c, fmt.Errorf("opcua: Config.MaxContinuationPoints %d: want at most 65535", c.MaxContinuationPoints)
	}
	return c, nil
}

func (c Config) checkPeers() error {
	for k, uri := range c.PeerApplicationURIs {
		switch {
		case strings.TrimSpace(uri) == "":
			return fmt.Errorf("opcua: Config.PeerApplicationURIs[%d] is empty", k)
		case uri == c.ApplicationURI:
			return fmt.Errorf("opcua: Config.PeerApplicationURIs[%d] %q is this server's ApplicationURI; every server of a redundant set needs its own", k, uri)
		case slices.Index(c.PeerApplicationURIs, uri) != k:
			return fmt.Errorf("opcua: Config.PeerApplicationURIs[%d] %q is listed twice", k, uri)
		}
	}
	if n := len(c.PeerDiscoveryURLs); n != 0 && n != len(c.PeerApplicationURIs) {
		return fmt.Errorf("opcua: Config.PeerDiscoveryURLs has %d entries: want none or one per PeerApplicationURIs entry (%d)", n, len(c.PeerApplicationURIs))
	}
	for k, u := range c.PeerDiscoveryURLs {
		if u != "" && !strings.HasPrefix(u, "opc.tcp://") {
			return fmt.Errorf("opcua: Config.PeerDiscoveryURLs[%d] %q: want opc.tcp://host:port", k, u)
		}
	}
	return nil
}

// serverURIs returns this server's ApplicationURI followed by the peers'.
func (c Config) serverURIs() []string {
	return append([]string{c.ApplicationURI}, c.PeerApplicationURIs...)
}

// uaserverConfig is the service layer's configuration.
func (c Config) uaserverConfig() uaserver.Config {
	port := max(c.Port, 0)
	peers := make([]uaserver.Peer, len(c.PeerApplicationURIs))
	for k, uri := range c.PeerApplicationURIs {
		peers[k] = uaserver.Peer{ApplicationURI: uri}
		if k < len(c.PeerDiscoveryURLs) {
			peers[k].DiscoveryURL = c.PeerDiscoveryURLs[k]
		}
	}
	var m uaserver.Mirror
	if c.Mirror != nil {
		m = c.Mirror
	}
	return uaserver.Config{
		Mirror:                       m,
		ListenAddr:                   net.JoinHostPort(c.ListenHost, strconv.Itoa(port)),
		EndpointURL:                  "opc.tcp://" + net.JoinHostPort(c.PublicHostname, strconv.Itoa(port)),
		ApplicationURI:               c.ApplicationURI,
		ProductURI:                   c.ProductURI,
		ApplicationName:              c.ApplicationName,
		Peers:                        peers,
		Limits:                       c.Limits,
		MaxContinuationPoints:        c.MaxContinuationPoints,
		MaxNodesPerTranslate:         c.MaxNodesPerTranslate,
		MaxNodesPerRegister:          c.MaxNodesPerRegister,
		MaxNodesPerMethodCall:        c.MaxNodesPerMethodCall,
		MaxNodesPerHistoryReadEvents: c.MaxNodesPerHistoryReadEvents,
		MaxHistoryEventsPerNode:      c.MaxHistoryEventsPerNode,
		MaxNodesPerHistoryReadData:   c.MaxNodesPerHistoryReadData,
		MaxHistoryValuesPerNode:      c.MaxHistoryValuesPerNode,
		MaxHistoryContinuationPoints: c.MaxHistoryContinuationPoints,
		Clock:                        c.Clock,
		Logger:                       c.Logger,

		Security:                        c.Security,
		Identities:                      c.Identities,
		DisableAnonymous:                c.DisableAnonymous,
		Users:                           c.Users,
		ValidateUserCertificate:         c.ValidateUserCertificate,
		Authorization:                   c.Authorization,
		MaxActivationFailuresPerAddress: c.MaxActivationFailuresPerAddress,
		ActivationLockout:               c.ActivationLockout,
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func defInt(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}
