package client

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// Security secures every connection of a Client (the active server's and
// the ServiceLevel watch of the others) with one policy and mode. Each
// server's certificate is taken from its GetEndpoints answer on a None
// discovery channel and must pass TrustServer.
type Security struct {
	// PolicyURI is the security policy, e.g. ua.SecurityPolicyURIBasic256Sha256.
	PolicyURI string
	// Mode is ua.MessageSecurityModeSign or MessageSecurityModeSignAndEncrypt.
	Mode ua.MessageSecurityMode
	// Certificate is the client's application instance certificate (DER,
	// RSA); its SubjectAltName URI, when it has one, is the client's
	// ApplicationUri in its sessions.
	Certificate []byte
	// PrivateKey is Certificate's key.
	PrivateKey *rsa.PrivateKey
	// TrustServer decides whether the certificate (DER, leaf first) the
	// endpoint at url presents is trusted; an error refuses that server
	// and is its connection error. Called from each server's connection
	// goroutine, possibly concurrently; must be safe for concurrent use.
	// Required.
	TrustServer func(url string, cert []byte) error
	// TokenLifetime is the security token lifetime asked for. Default:
	// uaclient.DefaultTokenLifetime.
	TokenLifetime time.Duration
}

// SecurityName is "Policy:Mode" for a policy URI and a mode, as
// OpcUa:Security:Policies names it ("Basic256Sha256:SignAndEncrypt").
func SecurityName(policyURI string, mode ua.MessageSecurityMode) string {
	_, policy, ok := strings.Cut(policyURI, "#")
	if !ok {
		policy = policyURI
	}
	return policy + ":" + strings.TrimPrefix(mode.String(), "MessageSecurityMode")
}

// applicationURI is the SubjectAltName URI of the client certificate, or
// "" when it has none.
func (s *Security) applicationURI() string {
	if s == nil {
		return ""
	}
	c, err := x509.ParseCertificate(s.Certificate)
	if err != nil || len(c.URIs) == 0 {
		return ""
	}
	return c.URIs[0].String()
}

// channelOptions are the options of a channel to url: security None, or
// Security with the certificate of url's matching endpoint once trusted.
func (c *Client) channelOptions(ctx context.Context, url string) (uaclient.Options, error) {
	o := uaclient.Options{DialTimeout: c.opts.Timeout, WriteTimeout: c.opts.Timeout}
	s := c.opts.Security
	if s == nil {
		return o, nil
	}
	eps, err := uaclient.GetEndpoints(ctx, url, o)
	if err != nil {
		return o, fmt.Errorf("discover the endpoints of %s: %w", url, err)
	}
	ep, err := pickEndpoint(eps, s.PolicyURI, s.Mode)
	if err != nil {
		return o, fmt.Errorf("%s: %w", url, err)
	}
	if s.TrustServer == nil {
		return o, fmt.Errorf("%s: client.Security.TrustServer is required", url)
	}
	if err := s.TrustServer(url, ep.ServerCertificate); err != nil {
		return o, err
	}
	o.Security = &uaclient.Security{
		PolicyURI: s.PolicyURI, Mode: s.Mode,
		Certificate: s.Certificate, PrivateKey: s.PrivateKey,
		ServerCertificate: ep.ServerCertificate, RequestedLifetime: s.TokenLifetime,
	}
	return o, nil
}

// pickEndpoint is the endpoint offering policy and mode; the error lists
// what the server offers instead.
func pickEndpoint(eps []*ua.EndpointDescription, policy string, mode ua.MessageSecurityMode) (*ua.EndpointDescription, error) {
	var offered []string
	for _, e := range eps {
		if e.SecurityPolicyURI == policy && e.SecurityMode == mode {
			if len(e.ServerCertificate) == 0 {
				return nil, fmt.Errorf("the %s endpoint presents no certificate", SecurityName(policy, mode))
			}
			return e, nil
		}
		offered = append(offered, SecurityName(e.SecurityPolicyURI, e.SecurityMode))
	}
	return nil, fmt.Errorf("no %s endpoint; the server offers %s", SecurityName(policy, mode), strings.Join(offered, ", "))
}
