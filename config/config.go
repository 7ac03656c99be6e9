package config

import (
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/otopcua/otopcua/opcua/limits"
)

// Split-brain resolver strategies accepted by Cluster:SplitBrainResolverStrategy.
const (
	StrategyAutoDown      = "auto-down"
	StrategyKeepOldest    = "keep-oldest"
	StrategyKeepMajority  = "keep-majority"
	StrategyStaticQuorum  = "static-quorum"
	StrategyLeaseMajority = "lease-majority"
)

// Strategies lists the accepted split-brain resolver strategies in the order
// they are reported to the user.
var Strategies = []string{StrategyAutoDown, StrategyKeepOldest, StrategyKeepMajority, StrategyStaticQuorum, StrategyLeaseMajority}

// Cluster roles accepted by Cluster:Roles and OTOPCUA_ROLES.
const (
	// RoleAdmin hosts the admin singletons (RedundancyStateActor and friends).
	RoleAdmin = "admin"
	// RoleDriver runs drivers and the OPC UA server and takes part in the
	// Primary election of its ClusterId.
	RoleDriver = "driver"
)

// Roles lists the accepted cluster roles.
var Roles = []string{RoleAdmin, RoleDriver}

// OPC UA redundancy support modes accepted by OpcUa:RedundancySupport.
const (
	RedundancyWarm = "Warm"
	RedundancyHot  = "Hot"
	// RedundancyHotAndMirrored mirrors every session and subscription to
	// the other driver members of the ClusterId (OpcUa:Mirror).
	RedundancyHotAndMirrored = "HotAndMirrored"
)

// RedundancySupports lists the accepted OpcUa:RedundancySupport values.
var RedundancySupports = []string{RedundancyWarm, RedundancyHot, RedundancyHotAndMirrored}

// Defaults and bounds of the OpcUa:Mirror keys (the defaults are those of
// package opcua/mirror).
const (
	DefaultMirrorAckTimeout  = 50 * time.Millisecond
	MinMirrorAckTimeout      = time.Millisecond
	MaxMirrorAckTimeout      = 5 * time.Second
	DefaultMirrorMaxLagBytes = 16 << 20
	MinMirrorMaxLagBytes     = 64 << 10
	MaxMirrorMaxLagBytes     = 1 << 30
	DefaultMirrorQueueSize   = 100
	MinMirrorQueueSize       = 1
	MaxMirrorQueueSize       = 10000
	DefaultMirrorMatchWindow = time.Second
	MinMirrorMatchWindow     = 10 * time.Millisecond
	MaxMirrorMatchWindow     = 60 * time.Second
)

// Config DB providers accepted by ConfigDb:Provider.
const (
	ProviderSQLite    = "sqlite"
	ProviderSQLServer = "sqlserver"
	ProviderPostgres  = "postgres"
)

// Providers lists the accepted Config DB providers.
var Providers = []string{ProviderSQLite, ProviderSQLServer, ProviderPostgres}

// Write modes accepted by OpcUa:WriteMode.
const (
	WriteModeOptimistic = "optimistic"
	WriteModeConfirmed  = "confirmed"
	WriteModeForward    = "forward"
)

// WriteModes lists the accepted write modes.
var WriteModes = []string{WriteModeOptimistic, WriteModeConfirmed, WriteModeForward}

// SecurityPolicyNone is the OPC UA security policy without security.
const SecurityPolicyNone = "None"

// SecurityPolicies are the accepted OpcUa:Security:Policies entries, as
// "Policy:Mode".
var SecurityPolicies = []string{
	"None:None",
	"Basic256Sha256:Sign", "Basic256Sha256:SignAndEncrypt",
	"Aes128_Sha256_RsaOaep:Sign", "Aes128_Sha256_RsaOaep:SignAndEncrypt",
	"Aes256_Sha256_RsaPss:Sign", "Aes256_Sha256_RsaPss:SignAndEncrypt",
}

// Log levels and formats accepted by the Telemetry section.
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"json", "text"}
)

// Config is one node's configuration: the appsettings.json sections, with the
// same section and key names. Keys are matched case-insensitively when loaded.
// A Config returned by Load or Default has every derived default filled in
// (PublicHostname, OpcUa:ApplicationUri, DownOnConnectionRefused,
// ConfigDb:ConnectionString for sqlite) and has passed Validate.
type Config struct {
	Cluster    ClusterConfig
	Node       NodeConfig
	OpcUa      OpcUaConfig
	ConfigDb   ConfigDbConfig
	LocalDb    LocalDbConfig
	Http       HttpConfig
	Telemetry  TelemetryConfig
	Deployment DeploymentConfig
	Redundancy RedundancyConfig
	History    HistoryConfig
}

// RedundancyConfig is the "Redundancy" section: planned failovers and the
// floating address.
type RedundancyConfig struct {
	// ManualFailoverDrain is how long a Primary asked to leave by a manual
	// failover (admin pages) shows ServiceLevel 0 and its
	// EstimatedReturnTime before it leaves the cluster, so that OPC UA
	// clients move to the other server while this one still answers.
	// Accepted 0 s to 60 s (0: leave at once). Default 2 s.
	ManualFailoverDrain time.Duration

	// PromotionHold is how long a node that becomes Primary after its
	// peer was downed while it may still be alive (silence, a partition)
	// waits before it advertises 250 and services writes, acks, alerts and
	// the historian drain: at least the time the old Primary needs to learn
	// it lost (DefaultPromotionHold) and stop. A peer proven dead by the crash fast
	// path is taken over without it. Read under lease-majority only.
	// Accepted 0 s to 30 s; default 250 ms (DefaultPromotionHold).
	PromotionHold time.Duration

	// FloatingAddress is a service address that follows the Primary of
	// this node's ClusterId. Default: none (Address "").
	FloatingAddress FloatingAddressConfig

	// DeviceHealth is what this node's field devices change: "off" (the
	// reference's ServiceLevel table, nothing changes), "level" (a node
	// whose peer reaches more of the ClusterId's devices drops into the
	// Degraded band, servicelevel.DeviceLevel) or "failover" (level, and
	// the Primary hands its role over through the manual failover path
	// once a peer has reached strictly more devices for
	// DeviceFailoverAfter). Default "off".
	DeviceHealth string
	// DeviceFailoverAfter is how long a peer must have reached strictly
	// more devices than the Primary before the Primary hands over (failover
	// only). Accepted 1 s to 10 min; default 10 s.
	DeviceFailoverAfter time.Duration
	// DeviceFailoverHold is how long a node that became Primary (by a
	// device hand-over or any other failover) never hands over for device
	// health, and the least time between two hand-overs it asks for
	// (failover only): the role does not flap. Accepted 0 s to 1 h;
	// default 60 s.
	DeviceFailoverHold time.Duration
}

// Accepted values of Redundancy:DeviceHealth.
const (
	DeviceHealthOff      = "off"
	DeviceHealthLevel    = "level"
	DeviceHealthFailover = "failover"
)

// DeviceHealthModes lists the accepted Redundancy:DeviceHealth values.
var DeviceHealthModes = []string{DeviceHealthOff, DeviceHealthLevel, DeviceHealthFailover}

// Bounds and defaults of the device hand-over's timings.
const (
	DefaultDeviceFailoverAfter = 10 * time.Second
	DefaultDeviceFailoverHold  = 60 * time.Second
	MinDeviceFailoverAfter     = time.Second
	MaxDeviceFailoverAfter     = 10 * time.Minute
	MaxDeviceFailoverHold      = time.Hour
)

// MaxPromotionHold is the longest Redundancy:PromotionHold accepted.
const MaxPromotionHold = 30 * time.Second

// MaxManualFailoverDrain is the longest Redundancy:ManualFailoverDrain
// accepted.
const MaxManualFailoverDrain = 60 * time.Second

// DeploymentConfig is the "Deployment" section: how a node follows the
// deployments of its ClusterId in the Config DB.
type DeploymentConfig struct {
	// PollInterval is how often the node asks the Config DB for a newer
	// deployment (a deployments notice on the cluster makes it look at
	// once). Default 5 s.
	PollInterval time.Duration
}

// ClusterConfig is the "Cluster" section: membership transport, seeds, roles
// and downing.
type ClusterConfig struct {
	// Hostname is the address the cluster transport binds to.
	// Default "0.0.0.0" (every interface).
	Hostname string

	// Port is the TCP port of the cluster transport. Default 4053.
	Port int

	// PublicHostname is the host name or IP address peers use to reach this
	// node; together with Port it forms the NodeId (host:port). Default: the
	// operating system's host name, or "localhost" when that cannot be read.
	// Set it explicitly on every real pair: both nodes must agree on how to
	// reach each other.
	PublicHostname string

	// SeedNodes lists the cluster addresses contacted to join, as
	// "akka.tcp://otopcua@host:port" or "host:port". List both nodes of a
	// pair on both nodes; only the first seed may form a new cluster.
	// Default: empty, which means this node alone (its own address) when
	// OpcUa:PeerApplicationUris is empty too; a node with peers must list
	// seeds.
	SeedNodes []string

	// Roles are this node's cluster roles: "admin" and/or "driver".
	// Default both. OTOPCUA_ROLES=admin,driver overrides it.
	Roles []string

	// SelfFormAfter is how long a node without membership waits before it
	// forms a cluster on itself (only if no other seed accepts a TCP
	// connection and its own address is in SeedNodes). Default 10 s; JSON
	// null or a value ≤ 0 disables it and is stored as 0.
	SelfFormAfter time.Duration `null:"zero"`

	// SplitBrainResolverStrategy selects the downing strategy: "auto-down"
	// (default), "keep-oldest", "keep-majority", "static-quorum" or
	// "lease-majority".
	SplitBrainResolverStrategy string

	// AutoDownUnreachableAfter is how long a member stays unreachable before
	// the leader downs it under auto-down. Default 15 s.
	AutoDownUnreachableAfter time.Duration

	// StableAfter is how long membership must be stable before a split-brain
	// resolver strategy decides. Default (absent or 0): 1 s under
	// lease-majority, where the shared lease decides and a hasty decision
	// can cost an unneeded failover but never dual-active, 15 s otherwise.
	StableAfter time.Duration

	// DownIfAlone applies to keep-oldest: the oldest member downs itself when
	// it is alone on its side of a partition. Default true.
	DownIfAlone bool

	// StaticQuorumSize is the quorum for static-quorum (number of members).
	// Required, at least 1, when the strategy is static-quorum. Default 0.
	StaticQuorumSize int

	// DownOnConnectionRefused lets a peer whose address refuses TCP
	// connections (the process is gone) be downed at once instead of after
	// the unreachable timeout. Default: on for auto-down, off otherwise;
	// JSON null means the default. Read it through DownOnConnectionRefusedEnabled.
	DownOnConnectionRefused *bool `null:"zero"`

	// FailureDetector tunes the phi-accrual failure detector.
	FailureDetector FailureDetectorConfig

	// AkkaConfigPath optionally names an existing akka.conf (HOCON) whose
	// failure-detector and split-brain-resolver blocks are read. A relative
	// path is resolved against the directory of the configuration file.
	// Default "" (none).
	AkkaConfigPath string

	// Tls runs the cluster transport (and the LocalDb replication port)
	// over mutual TLS when its three files are set: each node presents
	// CertFile and accepts only peers whose certificate is signed by
	// CaFile. Default: all empty, clear-text transport (acceptable on
	// loopback only; `otopcua config check` warns otherwise).
	Tls ClusterTLSConfig

	// Secret is the shared cluster secret: a node joins only when it proves
	// it holds the same secret (an HMAC-SHA256 in the join handshake; the
	// secret itself never travels). At least MinClusterSecretLen
	// characters when set; set it through OTOPCUA_CLUSTER__SECRET to keep
	// it out of the file. Never printed: `config check` shows "(set)".
	// Default empty: no join check.
	Secret string

	// Lease is the shared lease lease-majority decides with (required by
	// it): the Config DB or an etcd cluster that every node of the set
	// reaches.
	Lease LeaseConfig
}

// Lease providers accepted by Cluster:Lease:Provider.
const (
	LeaseConfigDb = "configdb"
	LeaseEtcd     = "etcd"
)

// LeaseProviders lists the accepted Cluster:Lease:Provider values ("" is
// none).
var LeaseProviders = []string{LeaseConfigDb, LeaseEtcd}

// Cluster:Lease:Ttl bounds. The default is short enough that a Primary
// frozen while it held the lease has lost it (it renews no more) before
// its peer decides to take over (≈ 2.6 s into the silence under
// lease-majority's defaults): a freeze costs the same with or without the
// lease held. The holder renews every TTL/3 (667 ms) and bounds each store
// call to TTL/2; the minimum keeps a renewal per keeper tick (250 ms)
// possible and is etcd's whole-second granularity.
const (
	DefaultLeaseTtl = 2 * time.Second
	MinLeaseTtl     = time.Second
	MaxLeaseTtl     = 60 * time.Second
)

// LeaseConfig is the "Cluster:Lease" section.
type LeaseConfig struct {
	// Provider is "configdb" (a row per ClusterId in the Config DB: a
	// networked PostgreSQL or SQL Server both nodes reach) or "etcd"
	// (Endpoints). Default "" (none): lease-majority refuses to start.
	Provider string
	// Ttl is how long a held lease lasts without renewal, on the store's
	// clock. Accepted 1 s to 60 s; default 2 s.
	Ttl time.Duration
	// Endpoints are the etcd client URLs (http://host:2379), tried in turn.
	// Required for etcd.
	Endpoints []string
}

// StableAfter, HeartbeatInterval and AcceptableHeartbeatPause defaults
// (absent or 0). Under lease-majority the shared lease decides every split,
// so a hasty suspicion costs at most an unneeded failover, never two
// Primaries: its defaults detect a silent peer in ≈ 2 s (heartbeat 500 ms,
// pause 1 s, phi 10 with a 100 ms deviation floor: a peer silent for ≈ 2.1 s)
// and decide 500 ms later — ten times the longest scheduling stall the
// false-positive runs inject (200 ms). docs/benchmarks-failover.md has the
// measurements behind them.
const (
	DefaultStableAfter                           = 15 * time.Second
	DefaultStableAfterLeaseMajority              = 500 * time.Millisecond
	DefaultHeartbeatInterval                     = time.Second
	DefaultHeartbeatIntervalLeaseMajority        = 500 * time.Millisecond
	DefaultAcceptableHeartbeatPause              = 3 * time.Second
	DefaultAcceptableHeartbeatPauseLeaseMajority = time.Second
)

// Redundancy:PromotionHold bounds and default.
const (
	// DefaultPromotionHold is one lease-keeper tick: by the time a node
	// takes over a silent peer (≥ 2 s of silence under lease-majority's
	// defaults) the old Primary has been fenced for a second — its set
	// stopped being whole after a pause, and it holds no lease — and a
	// downed Primary that still hears its peer is told of its downing by
	// the gossip sent with it; the hold covers that message and the old
	// Primary's lower level reaching its clients.
	DefaultPromotionHold = 250 * time.Millisecond
)

// MinClusterSecretLen is the shortest Cluster:Secret accepted.
const MinClusterSecretLen = 16

// ClusterTLSConfig is the "Cluster:Tls" section: PEM files, all three or
// none.
type ClusterTLSConfig struct {
	// CaFile is a PEM file with the certificate authority (one or more
	// certificates) that signed every node's certificate. Peers are
	// accepted only with a certificate chaining to it.
	CaFile string
	// CertFile is a PEM file with this node's certificate (and its chain).
	// It is used both as server and as client certificate, so it needs the
	// extended key usages serverAuth and clientAuth, and must name the
	// node's Cluster:PublicHostname (DNS or IP subject alternative name):
	// peers check the name they dialled.
	CertFile string
	// KeyFile is the PEM file with CertFile's private key.
	KeyFile string
}

// Enabled reports whether any Cluster:Tls file is set (Validate requires
// all three then).
func (t ClusterTLSConfig) Enabled() bool {
	return t.CaFile != "" || t.CertFile != "" || t.KeyFile != ""
}

// Loopback reports whether the cluster transport binds a loopback address
// only ("localhost", 127.0.0.0/8 or ::1).
func (c *ClusterConfig) Loopback() bool { return loopbackHost(c.Hostname) }

// FailureDetectorConfig is the "Cluster:FailureDetector" section.
type FailureDetectorConfig struct {
	// HeartbeatInterval is how often heartbeats are sent to each monitored
	// peer. Default (absent or 0): 500 ms under lease-majority, 1 s
	// otherwise (the reference's).
	HeartbeatInterval time.Duration

	// AcceptableHeartbeatPause is the pause tolerated before phi grows
	// quickly. Default (absent or 0): 1 s under lease-majority, where a
	// false suspicion costs at most an unneeded failover, 3 s otherwise.
	AcceptableHeartbeatPause time.Duration

	// Threshold is the phi value above which a peer is unreachable
	// (dimensionless). Default 10.0.
	Threshold float64
}

// NodeConfig is the "Node" section.
type NodeConfig struct {
	// ClusterId is the application cluster (redundant set) this node belongs
	// to; the Primary is elected per ClusterId. Letters, digits, '.', '_' and
	// '-' only. Default "default".
	ClusterId string
}

// OpcUaConfig is the "OpcUa" section.
type OpcUaConfig struct {
	// Port is the OPC UA TCP port (opc.tcp). Default 4840.
	Port int

	// ApplicationUri is this server's ApplicationUri, distinct on every node
	// of the set. Default "urn:<Cluster:PublicHostname>:otopcua".
	ApplicationUri string

	// ApplicationName is the server's display name. Default "otopcua".
	ApplicationName string

	// PeerApplicationUris are the other servers of the redundant set,
	// advertised in Server.ServerArray and ServerUriArray. No duplicates and
	// never this node's own ApplicationUri. Default empty.
	PeerApplicationUris []string

	// PeerDiscoveryUrls are optional opc.tcp:// endpoint URLs of the peers,
	// returned by FindServers. Default empty.
	PeerDiscoveryUrls []string

	// RedundancySupport is advertised in Server.ServerRedundancy: "Warm"
	// (default), "Hot" or "HotAndMirrored" (case-insensitive).
	// HotAndMirrored also mirrors every session and subscription served
	// here to the other driver members of the ClusterId (see Mirror); it
	// needs a cluster: other seeds in Cluster:SeedNodes and the driver role.
	RedundancySupport string

	// Mirror tunes session mirroring; read only under RedundancySupport
	// HotAndMirrored.
	Mirror MirrorConfig

	// Security selects the endpoint security.
	Security SecurityConfig

	// WriteMode is how a client write to a tag is answered: "optimistic"
	// (default: Good at once, reverted with a Bad blip and an
	// AuditWriteUpdateEvent when the Primary gate or the device refuses
	// it), "confirmed" (the answer waits for the device, at most
	// WriteTimeout, and carries its result or the gate's denial) or
	// "forward" (confirmed on the Primary; on a non-Primary the write is
	// sent to the Primary of the ClusterId, executed there once and its
	// result returned within WriteTimeout — package forward).
	WriteMode string

	// WriteTimeout bounds one device write. Default 2 s.
	WriteTimeout time.Duration

	// Authorization maps each role to its rights on the OPC UA endpoint
	// ("read", "write", "acknowledge", "call"). See AuthorizationConfig.
	Authorization AuthorizationConfig

	// Limits bound what clients may hold: connections, sessions,
	// subscriptions, monitored items, response sizes and the deadlines of a
	// new connection. See limits.Limits and docs/operations.md.
	Limits limits.Limits
}

// MirrorConfig is the "OpcUa:Mirror" section: session and subscription
// mirroring under OpcUa:RedundancySupport HotAndMirrored
// (docs/redundancy.md, "Mirrored sessions").
type MirrorConfig struct {
	// Sync: a NotificationMessage leaves for the client only once every
	// ready peer acknowledged it, or AckTimeout passed. false sends at once;
	// a failover right after a message may then deliver its values twice.
	// Default true.
	Sync bool

	// AckTimeout bounds the wait of Sync; a peer that misses it puts the
	// session back to Warm. 1 ms to 5 s. Default 50 ms.
	AckTimeout time.Duration

	// MaxLagBytes bounds what one peer may hold unacknowledged; beyond it
	// the largest sessions are put back to Warm, never queued. Bytes,
	// 65536 (64 KiB) to 1073741824 (1 GiB). Default 16777216 (16 MiB).
	MaxLagBytes int

	// QueueSize is the queue of every mirrored data item on a peer: the
	// values a client can be owed after a failover. 1 to 10000 values.
	// Default 100.
	QueueSize int

	// MatchWindow: a value sampled on a peer and one reported by the
	// serving member are the same device value when they are equal and
	// their SourceTimestamps differ by at most this. 10 ms to 60 s.
	// Default 1 s.
	MatchWindow time.Duration
}

// SecurityConfig is the "OpcUa:Security" section.
type SecurityConfig struct {
	// Policies are the endpoints offered, each "Policy:Mode" (one of
	// SecurityPolicies, case-insensitive, e.g.
	// "Basic256Sha256:SignAndEncrypt"; "None" alone means "None:None"), no
	// duplicates. A secure channel with policy None is always accepted for
	// discovery (GetEndpoints, FindServers); sessions only on the listed
	// endpoints. Default ["None:None"].
	Policies []string

	// PkiDir is the PKI directory: the server's application instance
	// certificate (own/), trusted client certificates and CAs (trusted/,
	// issuers/) and refused ones (rejected/). Relative paths are from the
	// working directory. Keep it on a volume: the certificate generated in
	// it at first start is what clients trust. Default "pki".
	PkiDir string

	// CertificateFile is the server's application instance certificate
	// (DER or PEM; a PEM file may carry the issuer chain after the leaf)
	// when it is issued by the site's CA instead of generated in PkiDir.
	// Given together with KeyFile or not at all. Default "" (generate).
	CertificateFile string

	// KeyFile is CertificateFile's RSA private key (at least 2048 bits;
	// PKCS #1 or PKCS #8, PEM or DER). Default "".
	KeyFile string

	// AutoAcceptUntrusted trusts every unknown client certificate on first
	// contact (it is copied to PkiDir/trusted/certs). For commissioning
	// only; config check and start-up warn while it is true. Default false.
	AutoAcceptUntrusted bool

	// AllowAnonymous accepts sessions activated with an anonymous identity
	// token (their rights are OpcUa:Authorization:Anonymous); false refuses
	// them with BadIdentityTokenRejected. Default true.
	AllowAnonymous bool
}

// The rights a role may hold on the OPC UA endpoint (OpcUa:Authorization).
const (
	RightRead        = "read"
	RightWrite       = "write"
	RightAcknowledge = "acknowledge"
	RightCall        = "call"
)

// Rights lists the accepted rights.
var Rights = []string{RightRead, RightWrite, RightAcknowledge, RightCall}

// AuthorizationConfig is the "OpcUa:Authorization" section: the rights of
// each admin user role (admin.Roles) and of anonymous sessions, each a list
// of Rights. read allows Read; write allows Write; acknowledge allows the
// condition methods Acknowledge, Confirm and AddComment; call allows the
// other methods. A role given replaces its default list; a role left out
// keeps it.
type AuthorizationConfig struct {
	// Administrator. Default [read, write, acknowledge, call].
	Administrator []string
	// ConfigEditor. Default [read].
	ConfigEditor []string
	// Operator. Default [read, write, acknowledge, call].
	Operator []string
	// Designer. Default [read].
	Designer []string
	// Viewer. Default [read].
	Viewer []string
	// Anonymous: sessions with an anonymous identity token. Default [read].
	Anonymous []string
}

// AuthorizationRoles are the keys of OpcUa:Authorization, in order.
var AuthorizationRoles = []string{"Administrator", "ConfigEditor", "Operator", "Designer", "Viewer", "Anonymous"}

// ByRole returns the rights by role name ("Administrator", ...,
// "Anonymous").
func (a AuthorizationConfig) ByRole() map[string][]string {
	return map[string][]string{
		"Administrator": a.Administrator, "ConfigEditor": a.ConfigEditor, "Operator": a.Operator,
		"Designer": a.Designer, "Viewer": a.Viewer, "Anonymous": a.Anonymous,
	}
}

func defaultAuthorization() AuthorizationConfig {
	all := func() []string { return []string{RightRead, RightWrite, RightAcknowledge, RightCall} }
	read := func() []string { return []string{RightRead} }
	return AuthorizationConfig{Administrator: all(), ConfigEditor: read(), Operator: all(), Designer: read(), Viewer: read(), Anonymous: read()}
}

// ConfigDbConfig is the "ConfigDb" section: the database shared by every
// node of the set.
type ConfigDbConfig struct {
	// Provider is "sqlite" (default), "sqlserver" or "postgres".
	Provider string

	// ConnectionString is passed to the provider's driver. Default
	// "file:otopcua.db" for sqlite; required for the other providers.
	ConnectionString string
}

// HistoryConfig is the "History" section: where the node records the
// values of the tags its deployment historizes (docs/history.md).
type HistoryConfig struct {
	// Path is the directory of the node's history store, created when a
	// deployment first historizes a tag. Default "otopcua-history"
	// (relative to the working directory).
	Path string
	// MaxSizeMiB bounds the store's size on disk, in MiB (2^20 bytes):
	// above it, the oldest blocks of samples are removed in the
	// background, whatever the tags' historyRetention. 0 (the default):
	// no limit; otherwise MinHistoryMaxSizeMiB (16 MiB) to
	// MaxHistoryMaxSizeMiB (16 TiB).
	MaxSizeMiB int
}

// The accepted range of History:MaxSizeMiB (besides 0).
const (
	MinHistoryMaxSizeMiB = 16
	MaxHistoryMaxSizeMiB = 16 << 20
)

// LocalDbConfig is the "LocalDb" section: the node's own SQLite file.
type LocalDbConfig struct {
	// Path is the SQLite file of this node's local store. Default
	// "otopcua-local.db" (relative to the working directory).
	Path string

	// SyncListenPort is the TCP port this node serves LocalDb pair
	// replication on (gRPC). Default 0: replication off. Replication is on
	// only when SyncListenPort, Peers and Replication:ApiKey are all set;
	// see LocalDbReplication.
	SyncListenPort int

	// Peers lists the pair peers' replication addresses as host:port (the
	// peer's LocalDb:SyncListenPort). Default empty: replication off.
	Peers []string

	// Replication holds the replication secret.
	Replication LocalDbReplicationConfig
}

// LocalDbReplicationConfig is the "LocalDb:Replication" section.
type LocalDbReplicationConfig struct {
	// ApiKey is the shared secret both nodes of a pair present to each
	// other; a peer presenting another key is refused. At least 16
	// characters when set. Default empty: replication off.
	ApiKey string
}

// HttpConfig is the "Http" section: /healthz, /readyz, /metrics and the
// admin pages.
type HttpConfig struct {
	// Port is the HTTP port. Default 8080; 0 disables the HTTP endpoint
	// (no health probes and no /metrics).
	Port int

	// Hostname is the address the HTTP server binds to. Default "0.0.0.0".
	Hostname string

	// ReadTimeout bounds reading one request, headers and body; a client
	// that sends slower (a body that never ends) is cut off. Default 10 s.
	ReadTimeout time.Duration

	// WriteTimeout bounds writing one response. Default 30 s.
	WriteTimeout time.Duration

	// MaxBodyBytes is the largest request body accepted on any endpoint; a
	// larger one is answered 413. Bytes. Default 1048576 (1 MiB).
	MaxBodyBytes int

	// Tls serves the HTTP endpoint (health, metrics and the admin pages)
	// over TLS when both files are set. Without it the admin pages warn
	// that passwords travel in clear text unless Hostname is a loopback
	// address.
	Tls HttpTLSConfig

	// AnonymousRead serves the node's read reports (/api/cluster/members,
	// /api/cluster/config, /api/actors, /api/deployment, /alerts,
	// /api/localdb, /api/historian) to callers without a session or an API
	// token, as before they needed one: for a lab or a test rig only,
	// since they show device addresses and live process values. The admin
	// pages and their API stay signed in; /healthz, /readyz and /metrics
	// are open either way. Start-up and `otopcua config check` warn while
	// it is true. Default false.
	AnonymousRead bool
}

// HttpTLSConfig is the "Http:Tls" section.
type HttpTLSConfig struct {
	// CertFile is a PEM file with the server certificate (and its chain).
	CertFile string
	// KeyFile is the PEM file with CertFile's private key.
	KeyFile string
}

// Enabled reports whether TLS is configured.
func (t HttpTLSConfig) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// Loopback reports whether the HTTP endpoint binds a loopback address only
// ("localhost", 127.0.0.0/8 or ::1).
func (h *HttpConfig) Loopback() bool { return loopbackHost(h.Hostname) }

func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TelemetryConfig is the "Telemetry" section.
type TelemetryConfig struct {
	// LogLevel is "debug", "info" (default), "warn" or "error".
	LogLevel string

	// LogFormat is "json" (default) or "text".
	LogFormat string

	// MetricsEnabled serves OTel metrics on /metrics. Default true.
	MetricsEnabled bool
}

// staticDefaults returns the defaults that do not depend on other keys.
// Derived defaults are filled in by resolve.
func staticDefaults() *Config {
	return &Config{
		Cluster: ClusterConfig{
			Hostname:                   "0.0.0.0",
			Port:                       4053,
			SeedNodes:                  []string{},
			Roles:                      []string{RoleAdmin, RoleDriver},
			SelfFormAfter:              10 * time.Second,
			SplitBrainResolverStrategy: StrategyAutoDown,
			AutoDownUnreachableAfter:   15 * time.Second,
			StableAfter:                0, // the strategy's default (resolve)
			DownIfAlone:                true,
			Lease:                      LeaseConfig{Ttl: DefaultLeaseTtl, Endpoints: []string{}},
			FailureDetector: FailureDetectorConfig{
				HeartbeatInterval:        0, // the strategy's default (resolve)
				AcceptableHeartbeatPause: 0, // the strategy's default (resolve)
				Threshold:                10.0,
			},
		},
		Node: NodeConfig{ClusterId: "default"},
		OpcUa: OpcUaConfig{
			Port:                4840,
			ApplicationName:     "otopcua",
			PeerApplicationUris: []string{},
			PeerDiscoveryUrls:   []string{},
			RedundancySupport:   RedundancyWarm,
			Mirror: MirrorConfig{Sync: true, AckTimeout: DefaultMirrorAckTimeout, MaxLagBytes: DefaultMirrorMaxLagBytes,
				QueueSize: DefaultMirrorQueueSize, MatchWindow: DefaultMirrorMatchWindow},
			Security:      SecurityConfig{Policies: []string{"None:None"}, PkiDir: "pki", AllowAnonymous: true},
			Authorization: defaultAuthorization(),
			Limits:        limits.Defaults(),
			WriteMode:     WriteModeOptimistic,
			WriteTimeout:  2 * time.Second,
		},
		Deployment: DeploymentConfig{PollInterval: 5 * time.Second},
		Redundancy: RedundancyConfig{ManualFailoverDrain: 2 * time.Second, PromotionHold: DefaultPromotionHold, FloatingAddress: defaultFloating(), DeviceHealth: DeviceHealthOff, DeviceFailoverAfter: DefaultDeviceFailoverAfter, DeviceFailoverHold: DefaultDeviceFailoverHold},
		ConfigDb:   ConfigDbConfig{Provider: ProviderSQLite},
		LocalDb:    LocalDbConfig{Path: "otopcua-local.db", Peers: []string{}},
		History:    HistoryConfig{Path: "otopcua-history"},
		Http:       HttpConfig{Port: 8080, Hostname: "0.0.0.0", ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second, MaxBodyBytes: 1 << 20},
		Telemetry:  TelemetryConfig{LogLevel: "info", LogFormat: "json", MetricsEnabled: true},
	}
}

// Default returns the configuration used when no file and no environment
// override is given, with every derived default filled in.
func Default() *Config {
	c := staticDefaults()
	c.resolve("")
	return c
}

// SelfFormEnabled reports whether the self-form fallback is armed.
func (c *ClusterConfig) SelfFormEnabled() bool { return c.SelfFormAfter > 0 }

// DownOnConnectionRefusedEnabled returns DownOnConnectionRefused, or its
// strategy-dependent default when unset.
func (c *ClusterConfig) DownOnConnectionRefusedEnabled() bool {
	if c.DownOnConnectionRefused != nil {
		return *c.DownOnConnectionRefused
	}
	return c.SplitBrainResolverStrategy == StrategyAutoDown
}

// HasRole reports whether role is one of this node's roles.
func (c *ClusterConfig) HasRole(role string) bool {
	for _, r := range c.Roles {
		if r == role {
			return true
		}
	}
	return false
}

// SelfAddress is the address peers use for this node: PublicHostname and Port.
func (c *ClusterConfig) SelfAddress() SeedAddress {
	return SeedAddress{Host: c.PublicHostname, Port: c.Port}
}

// NodeID is this node's identity in the cluster, "PublicHostname:Port".
func (c *ClusterConfig) NodeID() string { return c.SelfAddress().String() }

// SeedAddresses returns SeedNodes parsed, in order. Entries that do not parse
// are skipped; Validate reports them.
func (c *ClusterConfig) SeedAddresses() []SeedAddress {
	out := make([]SeedAddress, 0, len(c.SeedNodes))
	for _, s := range c.SeedNodes {
		if a, err := ParseSeedAddress(s); err == nil {
			out = append(out, a)
		}
	}
	return out
}

// IsOwnSeed reports whether this node's own address is in its seed list,
// the second guard of the self-form fallback.
func (c *ClusterConfig) IsOwnSeed() bool {
	self := c.SelfAddress()
	for _, a := range c.SeedAddresses() {
		if a.Equal(self) {
			return true
		}
	}
	return false
}

// BindAddr is the listen address of the cluster transport, Hostname:Port.
func (c *ClusterConfig) BindAddr() string {
	return net.JoinHostPort(c.Hostname, strconv.Itoa(c.Port))
}

// Addr is the listen address of the HTTP endpoint, Hostname:Port, or ""
// when Port is 0 (disabled).
func (c *HttpConfig) Addr() string {
	if c.Port == 0 {
		return ""
	}
	return net.JoinHostPort(c.Hostname, strconv.Itoa(c.Port))
}

// Summary is a one-line key=value description of the node for logs and
// `otopcua config check`.
func (c *Config) Summary() string {
	http := "disabled"
	if c.Http.Port != 0 {
		http = strconv.Itoa(c.Http.Port)
	}
	return strings.Join([]string{
		"node=" + c.Cluster.NodeID(),
		"cluster-id=" + c.Node.ClusterId,
		"roles=" + strings.Join(c.Cluster.Roles, ","),
		"seeds=" + strconv.Itoa(len(c.Cluster.SeedNodes)),
		"strategy=" + c.Cluster.SplitBrainResolverStrategy,
		"opcua=" + strconv.Itoa(c.OpcUa.Port),
		"uri=" + c.OpcUa.ApplicationUri,
		"redundancy=" + c.OpcUa.RedundancySupport,
		"peers=" + strconv.Itoa(len(c.OpcUa.PeerApplicationUris)),
		"http=" + http,
		"configdb=" + c.ConfigDb.Provider,
		"cluster-tls=" + onOff(c.Cluster.Tls.Enabled()),
		"cluster-secret=" + secretShown(c.Cluster.Secret),
	}, " ")
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// secretShown is how a secret appears in output: "(set)" or "(none)",
// never its value.
func secretShown(s string) string {
	if s != "" {
		return "(set)"
	}
	return "(none)"
}
