package host

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/config"
	"github.com/otopcua/otopcua/drivers"
	"github.com/otopcua/otopcua/opcua/pki"
	"github.com/otopcua/otopcua/opcua/uaserver"
)

// UsersPkiDir is the folder of PkiDir holding the trust list of X509 user
// certificates (trusted/certs, rejected/certs, … as the application
// store): a trusted certificate logs in as the admin user named by its
// subject's common name.
const UsersPkiDir = "users"

// opcuaSecurity is the OPC UA endpoint's security from OpcUa:Security and
// OpcUa:Authorization: the endpoints offered, the application instance
// certificate and the trust store, the users of the Config DB and each
// role's rights.
type opcuaSecurity struct {
	channel       uaserver.Security
	noAnonymous   bool
	users         uaserver.Users
	userCert      func(der []byte) (string, error)
	authorization map[string]uaserver.Rights
	// identities: the floating address's shared identity, when loaded.
	identities []uaserver.AddressIdentity
	// trustServer checks an upstream server's certificate against the
	// node's trust store (the opcua driver's secured channels); nil
	// without an identity.
	trustServer func(url string, der []byte) error
}

// driverIdentity is the node's certificate and PKI as the drivers take
// them; nil when the node has no certificate.
func (s opcuaSecurity) driverIdentity() *drivers.Identity {
	if len(s.channel.Certificate) == 0 || s.trustServer == nil {
		return nil
	}
	return &drivers.Identity{Certificate: s.channel.Certificate, PrivateKey: s.channel.PrivateKey, TrustServer: s.trustServer}
}

// needsIdentity reports whether the node needs its application instance
// certificate: a secured endpoint is offered, anonymous sessions are
// refused (so a UserName token must be possible), or one exists already
// (generated earlier or configured). A node serving None to anonymous
// clients only generates no key.
func needsIdentity(s config.SecurityConfig) bool {
	if s.CertificateFile != "" || !s.AllowAnonymous {
		return true
	}
	if slices.ContainsFunc(s.Policies, func(p string) bool { return p != "None:None" }) {
		return true
	}
	_, err := os.Stat(filepath.Join(s.PkiDir, pki.OwnCertFile))
	return err == nil
}

// newOpcuaSecurity opens the PKI directory (when the node needs its
// certificate) and builds the endpoint's security. users checks UserName
// tokens (the admin users of the Config DB).
func newOpcuaSecurity(cfg *config.Config, users *auth.Service, logger *slog.Logger) (opcuaSecurity, error) {
	sc := cfg.OpcUa.Security
	var out opcuaSecurity
	for _, p := range sc.Policies {
		e, err := uaserver.ParseEndpoint(p)
		if err != nil {
			return out, fmt.Errorf("OpcUa:Security:Policies: %w", err)
		}
		out.channel.Endpoints = append(out.channel.Endpoints, e)
	}
	out.noAnonymous = !sc.AllowAnonymous
	out.users = opcuaUsers{users}
	out.authorization = map[string]uaserver.Rights{}
	for role, rights := range cfg.OpcUa.Authorization.ByRole() {
		var r uaserver.Rights
		for _, name := range rights {
			r |= rightOf[name]
		}
		out.authorization[role] = r
	}
	if !needsIdentity(sc) {
		return out, nil
	}
	opts := pki.Options{AutoAcceptUntrusted: sc.AutoAcceptUntrusted, Logger: logger.With("part", "pki")}
	store, err := pki.Open(sc.PkiDir, opts)
	if err != nil {
		return out, fmt.Errorf("OpcUa:Security:PkiDir %s: %w", sc.PkiDir, err)
	}
	id, err := store.ApplicationIdentity(cfg.OpcUa.ApplicationUri, identityHosts(cfg), sc.CertificateFile, sc.KeyFile)
	if err != nil {
		return out, fmt.Errorf("OPC UA application instance certificate: %w", err)
	}
	logger.Info("OPC UA application instance certificate", "thumbprint", fmt.Sprintf("%X", id.Thumbprint[:]),
		"applicationUri", cfg.OpcUa.ApplicationUri, "pkiDir", store.Dir())
	out.channel.Certificate, out.channel.PrivateKey = id.Certificate, id.Key
	out.channel.ValidateClientCertificate = store.Validate
	out.trustServer = func(url string, der []byte) error {
		if err := store.Validate(der, ""); err != nil {
			return fmt.Errorf("the certificate of %s is not trusted by this node's PKI (%s): %w", url, store.Dir(), err)
		}
		return nil
	}
	userStore, err := pki.Open(filepath.Join(sc.PkiDir, UsersPkiDir), pki.Options{Logger: logger.With("part", "pki-users")})
	if err != nil {
		return out, fmt.Errorf("OpcUa:Security:PkiDir %s: %w", sc.PkiDir, err)
	}
	out.userCert = func(der []byte) (string, error) {
		if err := userStore.Validate(der, ""); err != nil {
			return "", err
		}
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return "", err
		}
		return c.Subject.CommonName, nil
	}
	return out, nil
}

var rightOf = map[string]uaserver.Rights{
	config.RightRead: uaserver.RightRead, config.RightWrite: uaserver.RightWrite,
	config.RightAcknowledge: uaserver.RightAcknowledge, config.RightCall: uaserver.RightCall,
}

// identityHosts are the names and addresses the node is reached by, for
// the certificate's SubjectAltName.
func identityHosts(cfg *config.Config) []string {
	hosts := []string{cfg.Cluster.PublicHostname, cfg.Cluster.Hostname, "localhost"}
	if h, err := os.Hostname(); err == nil {
		hosts = append(hosts, h)
	}
	var out []string
	for _, h := range hosts {
		if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) || slices.Contains(out, h) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// opcuaUsers checks UserName tokens against the admin users of the Config
// DB, with the admin pages' failure waits and check slots (one
// auth.Service serves both, so a name's failures from one address count
// on both surfaces).
type opcuaUsers struct{ s *auth.Service }

func (u opcuaUsers) Verify(ctx context.Context, name, password, addr string) (string, ua.StatusCode) {
	user, err := u.s.Verify(ctx, name, password, addr)
	return string(user.Role), userCode(err)
}

func (u opcuaUsers) Role(ctx context.Context, name string) (string, ua.StatusCode) {
	user, err := u.s.User(ctx, name)
	return string(user.Role), userCode(err)
}

// userCode maps an Authenticator error to a status code: wrong credentials
// and an attempt refused unchecked while its name from that address, or
// that address, must wait are BadUserAccessDenied (Part 4: the user could
// not be authenticated; a failed activation); a busy or unreachable user
// store is BadResourceUnavailable (not the client's fault).
func userCode(err error) ua.StatusCode {
	var throttled *admin.ThrottledError
	switch {
	case err == nil:
		return ua.StatusOK
	case errors.Is(err, admin.ErrBadCredentials), errors.As(err, &throttled):
		return ua.StatusBadUserAccessDenied
	default:
		return ua.StatusBadResourceUnavailable
	}
}
