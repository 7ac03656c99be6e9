// Package uatrust is a secured OPC UA client for multi-process tests that
// trusts exactly the server certificates it is given: Basic256Sha256
// SignAndEncrypt, a trust list that never grows, so a test can show that a
// client reconnects without a new trust decision, or that it refuses a
// certificate it was never given.
package uatrust

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha1"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua"
	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
)

// ErrUntrusted is Read's refusal of a server certificate outside the
// client's trust list.
var ErrUntrusted = errors.New("server certificate not in the client's trust list")

// Client is a secured OPC UA client with a fixed trust list.
type Client struct {
	// Trusted are the DER server certificates the client trusts.
	Trusted [][]byte
	// Cert and Key are the client's application instance certificate
	// (DER) and its key; URI is its ApplicationUri.
	Cert []byte
	Key  *rsa.PrivateKey
	URI  string
}

// Read connects to url, checks the Basic256Sha256 SignAndEncrypt
// endpoint's certificate against the trust list (the secure channel then
// proves the server holds that certificate's key), opens a session and
// reads Server.ServiceLevel.
func (c *Client) Read(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eps, err := opcua.GetEndpoints(ctx, url)
	if err != nil {
		return fmt.Errorf("GetEndpoints: %w", err)
	}
	var ep *ua.EndpointDescription
	for _, e := range eps {
		if e.SecurityPolicyURI == ua.SecurityPolicyURIBasic256Sha256 && e.SecurityMode == ua.MessageSecurityModeSignAndEncrypt {
			ep = e
		}
	}
	if ep == nil {
		return fmt.Errorf("%s offers no Basic256Sha256 SignAndEncrypt endpoint", url)
	}
	if !c.trusts(ep.ServerCertificate) {
		return fmt.Errorf("%s: %w (thumbprint %X, ApplicationUri %q)", url, ErrUntrusted, sha1.Sum(ep.ServerCertificate), ep.Server.ApplicationURI)
	}
	cl, err := opcua.NewClient(url, opcua.SecurityFromEndpoint(ep, ua.UserTokenTypeAnonymous),
		opcua.Certificate(c.Cert), opcua.PrivateKey(c.Key), opcua.ApplicationURI(c.URI),
		opcua.AutoReconnect(false), opcua.RequestTimeout(5*time.Second))
	if err != nil {
		return err
	}
	if err := cl.Connect(ctx); err != nil {
		return fmt.Errorf("secured session: %w", err)
	}
	defer cl.Close(context.Background())
	resp, err := cl.Read(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{
		NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue}}})
	if err != nil {
		return fmt.Errorf("Read: %w", err)
	}
	if len(resp.Results) != 1 || resp.Results[0].Status != ua.StatusOK {
		return fmt.Errorf("Read ServiceLevel: %v", resp.Results)
	}
	return nil
}

func (c *Client) trusts(cert []byte) bool {
	for _, t := range c.Trusted {
		if bytes.Equal(t, cert) {
			return true
		}
	}
	return false
}
