package uaserver

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/otopcua/otopcua/opcua/limits"
)

// Defaults of Config. A zero field takes the default named in its doc;
// the Limits take theirs from opcua/limits.
const (
	DefaultMaxRequestBytesPerChannel       = 1 << 20
	DefaultMaxRequestsInFlightPerChannel   = 64
	DefaultMaxContinuationPoints           = 10
	DefaultMaxNodesPerTranslate            = 10000
	DefaultMaxNodesPerRegister             = 10000
	DefaultMaxNodesPerMethodCall           = 1000
	DefaultMaxNodesPerHistoryReadEvents    = 100
	DefaultMaxHistoryEventsPerNode         = 1000
	DefaultMaxHistoryContinuationPoints    = 10
	DefaultMaxNodesPerHistoryReadData      = 100
	DefaultMaxHistoryValuesPerNode         = 10000
	DefaultMaxProcessedIntervals           = 1000000
	DefaultMaxActivationFailuresPerAddress = 20
	DefaultActivationLockout               = time.Minute
	DefaultMaxActivationAddresses          = 10000
	DefaultApplicationName                 = "otopcua"
	DefaultProductURI                      = "urn:otopcua"
)

// Peer is another server of the redundant set, listed by FindServers after
// this server.
type Peer struct {
	// ApplicationURI of the peer; required.
	ApplicationURI string
	// ApplicationName shown to clients. Default: ApplicationURI.
	ApplicationName string
	// DiscoveryURL is the peer's endpoint URL ("opc.tcp://host:port"). Empty:
	// the description carries no DiscoveryURLs.
	DiscoveryURL string
}

// Config configures a Server. Zero values take the documented defaults; New
// rejects values that make no sense with an error naming the field.
type Config struct {
	// Mirror, when set, mirrors the sessions and subscriptions served
	// here to the other members of the redundant set and lets a client
	// activate here a session another member served
	// (OpcUa:RedundancySupport HotAndMirrored). nil: no mirroring.
	Mirror Mirror

	// ListenAddr is the host:port the server binds, e.g. "0.0.0.0:4840" or
	// "127.0.0.1:0" (port 0: the kernel picks a free port). Required.
	ListenAddr string

	// EndpointURL is the URL advertised to clients,
	// "opc.tcp://<public host>:<port>[/path]". When its port is missing or
	// 0 the real listening port is substituted after Start. Default: the host
	// of ListenAddr (the machine's host name when that host is unspecified,
	// e.g. 0.0.0.0) with the real port.
	EndpointURL string

	// ApplicationURI identifies this server instance; it must differ between
	// the servers of a redundant set. Default: "urn:otopcua:<host name>".
	ApplicationURI string

	// ProductURI identifies the product. Default: "urn:otopcua".
	ProductURI string

	// ApplicationName is the human-readable name. Default: "otopcua".
	ApplicationName string

	// Peers are the other servers of the redundant set, answered by
	// FindServers after this server, in this order. Default: none.
	Peers []Peer

	// Limits are the OpcUa:Limits bounds (connections, sessions, session
	// timeouts, the deadlines of a new connection, response size, items
	// per call, nodes per Read, Write and Browse), declared in
	// opcua/limits; a zero field takes its default there. The subscription
	// and monitored-item totals in it are the subscription engine's to
	// apply, not this layer's. A per-address limit above its server-wide
	// one acts as that one.
	limits.Limits

	// MaxRequestBytesPerChannel bounds the encoded bytes of the requests of
	// one channel that are queued or being served; beyond it the server
	// stops reading that channel until one finishes (one request of any
	// allowed size is always admitted). Bytes. Default: 1 MiB.
	MaxRequestBytesPerChannel int

	// MaxRequestsInFlightPerChannel is the number of requests of one secure
	// channel that may be queued or running at once (a Publish answered later
	// no longer counts). When it is reached the server stops reading from
	// that channel until a request finishes (TCP back-pressure); other
	// channels are unaffected. Default: 64.
	MaxRequestsInFlightPerChannel int

	// MaxContinuationPoints is the number of Browse continuation points a
	// session holds; a new one beyond it drops the oldest. Default: 10.
	MaxContinuationPoints int

	// MaxNodesPerTranslate bounds BrowsePaths of one
	// TranslateBrowsePathsToNodeIds. Default: 10000.
	MaxNodesPerTranslate int
	// MaxNodesPerRegister bounds RegisterNodes / UnregisterNodes.
	// Default: 10000.
	MaxNodesPerRegister int
	// MaxNodesPerMethodCall bounds MethodsToCall of one Call. Default: 1000.
	MaxNodesPerMethodCall int
	// MaxNodesPerHistoryReadEvents bounds NodesToRead of one HistoryRead
	// (of events, and of any other details, whose nodes all answer
	// BadHistoryOperationUnsupported): more answers BadTooManyOperations.
	// Default: 100.
	MaxNodesPerHistoryReadEvents int
	// MaxHistoryEventsPerNode is the most events one node's result of a
	// HistoryRead carries, whatever NumValuesPerNode asks (0, "all",
	// included); a result is also cut when its events would pass its share
	// of MaxResponseSize (MaxResponseSize / the request's nodes). The rest
	// comes with a continuation point. Default: 1000.
	MaxHistoryEventsPerNode int
	// MaxHistoryContinuationPoints is the number of HistoryRead
	// continuation points a session holds; a new one beyond it releases
	// the oldest (which then answers BadContinuationPointInvalid).
	// Default: 10.
	MaxHistoryContinuationPoints int
	// MaxNodesPerHistoryReadData bounds NodesToRead of one HistoryRead of
	// values (raw, at time, processed): more answers BadTooManyOperations.
	// Default: 100.
	MaxNodesPerHistoryReadData int
	// MaxHistoryValuesPerNode is the most values (or processed intervals)
	// one node's result of a HistoryRead of values carries, whatever
	// NumValuesPerNode asks; the rest comes with a continuation point. A
	// ReadAtTime of more ReqTimes answers BadTooManyOperations for the node.
	// Default: 10000.
	MaxHistoryValuesPerNode int
	// MaxProcessedIntervals bounds the intervals of one ReadProcessed
	// (StartTime to EndTime by ProcessingInterval): more answers
	// BadTooManyOperations for the node. Default: 1000000.
	MaxProcessedIntervals int

	// Security configures the secure channels: the endpoints offered, the
	// server's certificate and key, the client certificate check and the
	// security token lifetimes. Default: security None only.
	Security Security

	// Identities are the application identities presented instead of this
	// server's own (ApplicationURI, Security.Certificate and PrivateKey) on
	// the connections accepted on their local addresses: everything the
	// server signs, decrypts or describes on such a connection (the
	// OpenSecureChannel's asymmetric security, CreateSession's certificate
	// and signature, the ApplicationDescription and ServerCertificate of
	// GetEndpoints, FindServers and CreateSession, the user tokens
	// encrypted or signed for the server) is the address's identity's.
	// A redundant set's floating address carries the identity its members
	// share, so that a client trusts it once. Connections on any other
	// address present the server's own. Default: none.
	Identities []AddressIdentity

	// DisableAnonymous refuses anonymous identity tokens (and absent ones)
	// with BadIdentityTokenRejected. Default false: they are accepted, with
	// the rights of AnonymousRole.
	DisableAnonymous bool

	// Users checks UserName tokens and gives a certificate user its role.
	// Without it the UserName token policy is not offered and neither is
	// the X509 one. Default: none.
	Users Users

	// ValidateUserCertificate checks an X509 identity token's certificate
	// (DER) against the user trust list and returns the user it names (a
	// user of Users). Without it the X509 token policy is not offered. It
	// is called on the channel's worker goroutine and must not block for
	// long. Default: none.
	ValidateUserCertificate func(der []byte) (userName string, err error)

	// Authorization gives each role (a Users role, or AnonymousRole) its
	// rights; a role missing from it has none. nil gives every session
	// every right (a server with no user management). Default: nil.
	Authorization map[string]Rights

	// MaxActivationFailuresPerAddress refused ActivateSession requests from
	// one client IP address within ActivationLockout lock that address out
	// of ActivateSession for ActivationLockout (BadUserAccessDenied, counted
	// as LimitActivationFailures). Default: 20.
	MaxActivationFailuresPerAddress int
	// ActivationLockout is the counting window and the length of a lock
	// (Clock). Default: 1 min.
	ActivationLockout time.Duration
	// MaxActivationAddresses is the most addresses whose failures are
	// remembered; beyond it the stalest is forgotten. Default: 10000.
	MaxActivationAddresses int

	// Clock drives session timeouts. Default: the real clock.
	Clock clockwork.Clock

	// Logger receives connection, session and handler-failure logs.
	// Default: slog.Default().
	Logger *slog.Logger
}

// withDefaults returns c with every zero field set to its default, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.ListenAddr == "" {
		return c, errors.New("uaserver: Config.ListenAddr is required (host:port, e.g. 0.0.0.0:4840)")
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return c, fmt.Errorf("uaserver: Config.ListenAddr %q: want host:port: %w", c.ListenAddr, err)
	}
	if c.EndpointURL != "" {
		if _, err := parseEndpointURL(c.EndpointURL); err != nil {
			return c, fmt.Errorf("uaserver: Config.EndpointURL %q: %w", c.EndpointURL, err)
		}
	}
	if c.ApplicationURI == "" {
		c.ApplicationURI = "urn:otopcua:" + hostname()
	}
	if c.ProductURI == "" {
		c.ProductURI = DefaultProductURI
	}
	if c.ApplicationName == "" {
		c.ApplicationName = DefaultApplicationName
	}
	for i, p := range c.Peers {
		if p.ApplicationURI == "" {
			return c, fmt.Errorf("uaserver: Config.Peers[%d].ApplicationURI is required", i)
		}
	}
	c.Limits = c.Limits.WithDefaults()
	defInt(&c.MaxRequestBytesPerChannel, DefaultMaxRequestBytesPerChannel)
	// A per-address limit above its server-wide one acts as that one.
	c.MaxConnectionsPerAddress = min(c.MaxConnectionsPerAddress, c.MaxConnections)
	c.MaxSessionsPerAddress = min(c.MaxSessionsPerAddress, c.MaxSessions)
	c.MaxUnactivatedSessions = min(c.MaxUnactivatedSessions, c.MaxSessions)
	c.MaxUnactivatedSessionsPerAddress = min(c.MaxUnactivatedSessionsPerAddress, c.MaxUnactivatedSessions, c.MaxSessionsPerAddress)
	defInt(&c.MaxRequestsInFlightPerChannel, DefaultMaxRequestsInFlightPerChannel)
	defInt(&c.MaxContinuationPoints, DefaultMaxContinuationPoints)
	defInt(&c.MaxNodesPerTranslate, DefaultMaxNodesPerTranslate)
	defInt(&c.MaxNodesPerRegister, DefaultMaxNodesPerRegister)
	defInt(&c.MaxNodesPerMethodCall, DefaultMaxNodesPerMethodCall)
	defInt(&c.MaxNodesPerHistoryReadEvents, DefaultMaxNodesPerHistoryReadEvents)
	defInt(&c.MaxHistoryEventsPerNode, DefaultMaxHistoryEventsPerNode)
	defInt(&c.MaxHistoryContinuationPoints, DefaultMaxHistoryContinuationPoints)
	defInt(&c.MaxNodesPerHistoryReadData, DefaultMaxNodesPerHistoryReadData)
	defInt(&c.MaxHistoryValuesPerNode, DefaultMaxHistoryValuesPerNode)
	defInt(&c.MaxProcessedIntervals, DefaultMaxProcessedIntervals)
	defInt(&c.MaxActivationFailuresPerAddress, DefaultMaxActivationFailuresPerAddress)
	defInt(&c.MaxActivationAddresses, DefaultMaxActivationAddresses)
	defDur(&c.ActivationLockout, DefaultActivationLockout)
	if (c.Security.Certificate == nil) != (c.Security.PrivateKey == nil) {
		return c, errors.New("uaserver: Config.Security: Certificate and PrivateKey go together: give both or neither")
	}
	if c.MinSessionTimeout > c.MaxSessionTimeout {
		return c, fmt.Errorf("uaserver: Config.MinSessionTimeout %s exceeds MaxSessionTimeout %s", c.MinSessionTimeout, c.MaxSessionTimeout)
	}
	c.DefaultSessionTimeout = min(max(c.DefaultSessionTimeout, c.MinSessionTimeout), c.MaxSessionTimeout)
	sec, err := c.Security.withDefaults()
	if err != nil {
		return c, err
	}
	c.Security = sec
	if err := checkIdentities(c.Identities, &c.Security); err != nil {
		return c, err
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func defInt(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

func defDur(v *time.Duration, def time.Duration) {
	if *v <= 0 {
		*v = def
	}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
}

// parseEndpointURL parses an "opc.tcp://host[:port][/path]" URL.
func parseEndpointURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(u.Scheme, "opc.tcp") {
		return nil, fmt.Errorf("scheme %q: want opc.tcp", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("no host")
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return nil, fmt.Errorf("port %q: %w", p, err)
		}
	}
	return u, nil
}

// advertisedURL returns the endpoint URL to advertise once the listener is
// bound to port: cfgURL with a missing or zero port replaced by port, or,
// when cfgURL is empty, one derived from listenAddr.
func advertisedURL(cfgURL, listenAddr string, port int) string {
	ps := strconv.Itoa(port)
	if cfgURL == "" {
		host, _, _ := net.SplitHostPort(listenAddr)
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = hostname()
		}
		return "opc.tcp://" + net.JoinHostPort(host, ps)
	}
	u, err := parseEndpointURL(cfgURL)
	if err != nil {
		return cfgURL // validated in withDefaults; unreachable
	}
	if p := u.Port(); p == "" || p == "0" {
		u.Host = net.JoinHostPort(u.Hostname(), ps)
	}
	return u.String()
}

// withHost returns endpoint (an advertised URL) with its host replaced by
// the host of clientURL, the URL a client says it dialled. When clientURL is
// empty or unparsable, endpoint is returned unchanged. The port and path stay
// the server's.
func withHost(endpoint, clientURL string) string {
	if clientURL == "" {
		return endpoint
	}
	cu, err := parseEndpointURL(clientURL)
	if err != nil {
		return endpoint
	}
	eu, err := parseEndpointURL(endpoint)
	if err != nil {
		return endpoint
	}
	if p := eu.Port(); p != "" {
		eu.Host = net.JoinHostPort(cu.Hostname(), p)
	} else {
		eu.Host = cu.Hostname()
	}
	return eu.String()
}
