package uaclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/gopcua/opcua/ua"
)

// The application authentication of a session on a secured channel (Part 4
// §5.6.2, §5.6.3): CreateSession sends our certificate and a nonce, the
// server proves its key by signing them; ActivateSession proves ours by
// signing the server's certificate and nonce.

// ErrServerSignature: CreateSession's ServerSignature (or certificate) is
// not the server's over our certificate and nonce.
var ErrServerSignature = errors.New("uaclient: the server's CreateSession signature is invalid")

// Policy is the channel's security policy URI (ua.SecurityPolicyURINone
// for None).
func (c *Channel) Policy() string {
	if c.sec == nil {
		return ua.SecurityPolicyURINone
	}
	return c.sec.policy
}

// Mode is the channel's message security mode.
func (c *Channel) Mode() ua.MessageSecurityMode {
	if c.sec == nil {
		return ua.MessageSecurityModeNone
	}
	return c.sec.mode
}

// clientCertificate is what CreateSession sends as ClientCertificate.
func (c *Channel) clientCertificate() []byte {
	if c.sec == nil {
		return nil
	}
	return c.sec.cert
}

// checkServerSignature verifies CreateSession's answer to clientNonce on a
// secured channel; nothing to check on None.
func (c *Channel) checkServerSignature(clientNonce []byte, cs *ua.CreateSessionResponse) error {
	s := c.sec
	if s == nil {
		return nil
	}
	if !sameLeaf(cs.ServerCertificate, s.serverCert) {
		return fmt.Errorf("%w: it answered with another certificate than its endpoint's", ErrServerSignature)
	}
	sig := cs.ServerSignature
	switch {
	case sig == nil || len(sig.Signature) == 0:
		return fmt.Errorf("%w: no signature", ErrServerSignature)
	case sig.Algorithm != s.asym.SignatureURI():
		return fmt.Errorf("%w: algorithm %q, want %q", ErrServerSignature, sig.Algorithm, s.asym.SignatureURI())
	}
	data := append(bytes.Clone(s.cert), clientNonce...)
	if err := s.asym.VerifySignature(data, sig.Signature); err != nil {
		return fmt.Errorf("%w: %v", ErrServerSignature, err)
	}
	return nil
}

// clientSignature is ActivateSession's ClientSignature: our signature over
// the server's certificate and its last nonce; empty on None.
func (c *Channel) clientSignature(serverNonce []byte) (*ua.SignatureData, error) {
	s := c.sec
	if s == nil {
		return &ua.SignatureData{}, nil
	}
	sig, err := s.asym.Signature(append(bytes.Clone(s.serverCert), serverNonce...))
	if err != nil {
		return nil, fmt.Errorf("uaclient: sign ActivateSession: %w", err)
	}
	return &ua.SignatureData{Algorithm: s.asym.SignatureURI(), Signature: sig}, nil
}

// GetEndpoints asks the server at endpoint for its endpoint descriptions
// on a channel with security None (Part 4 §5.4.4: discovery is answered
// without security), then closes that channel. opts.Security is ignored.
func GetEndpoints(ctx context.Context, endpoint string, opts Options) ([]*ua.EndpointDescription, error) {
	opts.Security = nil
	ch, err := Dial(ctx, endpoint, opts)
	if err != nil {
		return nil, err
	}
	defer ch.Close()
	resp, err := ch.Call(ctx, &ua.GetEndpointsRequest{EndpointURL: endpoint}, nil, ch.opts.DialTimeout)
	if err != nil {
		return nil, fmt.Errorf("uaclient: GetEndpoints: %w", err)
	}
	return resp.(*ua.GetEndpointsResponse).Endpoints, nil
}
