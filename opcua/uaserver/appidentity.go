package uaserver

import (
	"crypto/rsa"
	"fmt"
	"net"
	"net/netip"

	"github.com/gopcua/opcua/uapolicy"
)

// AddressIdentity is an application identity the server presents on the
// connections accepted on one of its local addresses instead of its own:
// the floating address of a redundant set, whose members all present the
// one identity a client trusted once.
type AddressIdentity struct {
	// Addr is the local address (the connection's LocalAddr, an
	// IPv4-mapped IPv6 address counting as its IPv4 address) the identity
	// applies to. Required; one identity per address.
	Addr netip.Addr

	// ApplicationURI is the identity's ApplicationUri, described by
	// GetEndpoints, FindServers and CreateSession on that address.
	// Required.
	ApplicationURI string

	// Certificate is the identity's application instance certificate (DER,
	// the leaf only, RSA): the one OpenSecureChannel and CreateSession send
	// and the client encrypts for. Required, with PrivateKey, when an
	// endpoint other than None is offered.
	Certificate []byte

	// PrivateKey is Certificate's private key: it decrypts and signs
	// everything the server decrypts and signs on that address.
	PrivateKey *rsa.PrivateKey
}

// appIdentity is what the server signs, decrypts and describes with on a
// channel: its own identity, or an AddressIdentity. Read-only after New.
type appIdentity struct {
	uri        string
	cert       []byte          // DER; nil without a certificate
	key        *rsa.PrivateKey // nil without a certificate
	thumbprint []byte          // SHA-1 of cert; nil without one
}

func newAppIdentity(uri string, cert []byte, key *rsa.PrivateKey) *appIdentity {
	id := &appIdentity{uri: uri, cert: cert, key: key}
	if len(cert) > 0 {
		id.thumbprint = uapolicy.Thumbprint(cert)
	}
	return id
}

// certificate is the identity's certificate for a response field that must
// not be null: empty without one.
func (id *appIdentity) certificate() []byte {
	if id.cert == nil {
		return []byte{}
	}
	return id.cert
}

// identities is the server's own identity and those of its local
// addresses. Read-only after New.
type identities struct {
	own    *appIdentity
	byAddr map[netip.Addr]*appIdentity
}

// forLocal returns the identity of a connection accepted on local: the
// AddressIdentity of that address, else the server's own.
func (ids *identities) forLocal(local net.Addr) *appIdentity {
	if ap, ok := localIP(local); ok {
		if id := ids.byAddr[ap]; id != nil {
			return id
		}
	}
	return ids.own
}

// localIP is the IP address of a connection's local end, unmapped
// and without a zone.
func localIP(a net.Addr) (netip.Addr, bool) {
	ta, ok := a.(*net.TCPAddr)
	if !ok || ta == nil {
		return netip.Addr{}, false
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return netip.Addr{}, false
	}
	return ip.Unmap().WithZone(""), true
}

// newIdentities builds the identity table of a Config already defaulted.
func newIdentities(c *Config) *identities {
	ids := &identities{
		own:    newAppIdentity(c.ApplicationURI, c.Security.Certificate, c.Security.PrivateKey),
		byAddr: make(map[netip.Addr]*appIdentity, len(c.Identities)),
	}
	for _, a := range c.Identities {
		ids.byAddr[a.Addr.Unmap().WithZone("")] = newAppIdentity(a.ApplicationURI, a.Certificate, a.PrivateKey)
	}
	return ids
}

// checkIdentities checks Config.Identities against the endpoints offered
// (sec, already defaulted): each names a valid address not named before
// and an ApplicationUri, and carries a certificate whenever a secured
// endpoint is offered.
func checkIdentities(ids []AddressIdentity, sec *Security) error {
	seen := make(map[netip.Addr]int, len(ids))
	for i, a := range ids {
		field := fmt.Sprintf("uaserver: Config.Identities[%d]", i)
		addr := a.Addr.Unmap().WithZone("")
		if !addr.IsValid() || addr.IsUnspecified() {
			return fmt.Errorf("%s.Addr %q: want one local IP address (not unspecified)", field, a.Addr)
		}
		if j, dup := seen[addr]; dup {
			return fmt.Errorf("%s.Addr %s: already Config.Identities[%d]'s address", field, addr, j)
		}
		seen[addr] = i
		if a.ApplicationURI == "" {
			return fmt.Errorf("%s.ApplicationURI is required", field)
		}
		if (a.Certificate == nil) != (a.PrivateKey == nil) {
			return fmt.Errorf("%s: Certificate and PrivateKey go together: give both or neither", field)
		}
		if !sec.securedOffered() {
			continue
		}
		if err := checkKeyPair(sec.Endpoints, a.Certificate, a.PrivateKey, field[len("uaserver: "):]); err != nil {
			return err
		}
	}
	return nil
}
