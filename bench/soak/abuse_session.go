package main

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/uaclient"
)

// hostileApp is how the abusers describe themselves in CreateSession.
var hostileApp = &ua.ApplicationDescription{
	ApplicationURI:  "urn:otopcua:bench:soak:abuser",
	ProductURI:      "urn:otopcua:bench",
	ApplicationName: ua.NewLocalizedText("otopcua soak abuser"),
	ApplicationType: ua.ApplicationTypeClient,
}

func createSessionRequest(endpoint string, r *rand.Rand, timeout time.Duration) *ua.CreateSessionRequest {
	nonce := make([]byte, 32)
	for i := range nonce {
		nonce[i] = byte(r.Uint32())
	}
	return &ua.CreateSessionRequest{
		ClientDescription:       hostileApp,
		EndpointURL:             endpoint,
		SessionName:             "soak abuser",
		ClientNonce:             nonce,
		RequestedSessionTimeout: ms(timeout),
	}
}

// createOnly creates a session on a proper channel, never activates it,
// and closes the channel: the session is left to the server's timeouts.
func (a *Abuse) createOnly(ctx context.Context, r *rand.Rand) {
	const name = "session/create-only"
	ch, err := uaclient.Dial(ctx, a.Endpoint, uaclient.Options{DialTimeout: opTimeout, LocalIP: a.LocalIP})
	if err != nil {
		a.note(ctx, name, "dial: ", err)
		return
	}
	defer ch.Close()
	_, err = ch.Call(ctx, createSessionRequest(a.Endpoint, r, hostileTimeout), nil, opTimeout)
	a.note(ctx, name, "", err)
}

// createActivateClose opens a session properly and closes it properly.
func (a *Abuse) createActivateClose(ctx context.Context, _ *rand.Rand) {
	const name = "session/create-activate-close"
	ch, err := uaclient.Dial(ctx, a.Endpoint, uaclient.Options{DialTimeout: opTimeout, LocalIP: a.LocalIP})
	if err != nil {
		a.note(ctx, name, "dial: ", err)
		return
	}
	defer ch.Close()
	s, err := uaclient.OpenSession(ctx, ch, uaclient.SessionParams{Name: "soak abuser", Application: hostileApp,
		Timeout: hostileTimeout, CallTimeout: opTimeout})
	a.note(ctx, name, "", err)
	if err == nil {
		a.note(ctx, name, "CloseSession ", s.Close(ctx, opTimeout))
	}
}

// createActivateDrop opens a session and resets the TCP connection
// without CloseSession or CloseSecureChannel: the session stays until its
// timeout, which the client asked to be an hour.
func (a *Abuse) createActivateDrop(ctx context.Context, r *rand.Rand) {
	const name = "session/create-activate-drop"
	rc, err := a.rawChannel(ctx)
	if err != nil {
		a.note(ctx, name, "channel: ", err)
		return
	}
	defer rc.drop()
	_, err = rawSession(rc, a.Endpoint, r, hostileTimeout)
	a.note(ctx, name, "", err)
}

// rawChannel dials and opens a secure channel with a rawConn.
func (a *Abuse) rawChannel(ctx context.Context) (*rawConn, error) {
	return a.rawChannelFrom(ctx, a.LocalIP)
}

// rawChannelFrom is rawChannel from the local address ip.
func (a *Abuse) rawChannelFrom(ctx context.Context, ip string) (*rawConn, error) {
	rc, err := dialRaw(ctx, a.Endpoint, opTimeout, ip)
	if err != nil {
		return nil, err
	}
	if err := rc.hello(opTimeout); err != nil {
		rc.close()
		return nil, err
	}
	if err := rc.open(opTimeout); err != nil {
		rc.close()
		return nil, err
	}
	return rc, nil
}

// rawSession creates and activates an anonymous session on rc and returns
// its authentication token.
func rawSession(rc *rawConn, endpoint string, r *rand.Rand, timeout time.Duration) (*ua.NodeID, error) {
	resp, err := rc.call(createSessionRequest(endpoint, r, timeout), nil, opTimeout)
	if err != nil {
		return nil, err
	}
	auth := resp.(*ua.CreateSessionResponse).AuthenticationToken
	return auth, rawActivate(rc, auth)
}

// rawActivate activates (or re-activates, on a new channel) the anonymous
// session auth on rc.
func rawActivate(rc *rawConn, auth *ua.NodeID) error {
	_, err := rc.call(&ua.ActivateSessionRequest{
		ClientSignature:    &ua.SignatureData{},
		LocaleIDs:          []string{},
		UserIdentityToken:  ua.NewExtensionObject(&ua.AnonymousIdentityToken{PolicyID: "anonymous"}),
		UserTokenSignature: &ua.SignatureData{},
	}, auth, opTimeout)
	return err
}
