package uaclient

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/gopcua/opcua/ua"
)

// Session is an activated session on a Channel.
type Session struct {
	ch   *Channel
	auth *ua.NodeID
	// ID is the server-assigned session NodeId.
	ID *ua.NodeID
	// Timeout is the session timeout the server revised to.
	Timeout time.Duration
	// ServerURI is the server's ApplicationUri as its CreateSession
	// response describes it ("" when it lists no endpoint).
	ServerURI string

	// What a later activation on another channel (Reactivate) needs.
	origCert  []byte                    // the server certificate of the CreateSession response
	nonce     []byte                    // the last server nonce received (CreateSession, then each ActivateSession)
	endpoints []*ua.EndpointDescription // the CreateSession response's, for the user token policy
	user      *UserName
}

// SessionParams describe a session to open.
type SessionParams struct {
	// Name is the session name the server shows.
	Name string
	// Application describes the client; nil: otopcua's default.
	Application *ua.ApplicationDescription
	// Timeout is the session timeout to ask for.
	Timeout time.Duration
	// CallTimeout bounds CreateSession and ActivateSession each.
	CallTimeout time.Duration
	// User activates the session with a UserNameIdentityToken, its
	// password encrypted for the server (see ErrNoUserNameToken). nil:
	// anonymous.
	User *UserName
}

// Auth is the session's authentication token, for Channel.Request.
func (s *Session) Auth() *ua.NodeID { return s.auth }

// Channel is the secure channel the session is activated on.
func (s *Session) Channel() *Channel { return s.ch }

// NewSession creates and activates an anonymous session named name, asking
// for sessionTimeout. Each service call waits at most callTimeout.
func NewSession(ctx context.Context, ch *Channel, name string, sessionTimeout, callTimeout time.Duration) (*Session, error) {
	return OpenSession(ctx, ch, SessionParams{
		Name: name,
		Application: &ua.ApplicationDescription{
			ApplicationURI:  "urn:otopcua:bench:subload",
			ProductURI:      "urn:otopcua:bench",
			ApplicationName: ua.NewLocalizedText("otopcua subload"),
			ApplicationType: ua.ApplicationTypeClient,
		},
		Timeout:     sessionTimeout,
		CallTimeout: callTimeout,
	})
}

// OpenSession creates and activates a session described by p: anonymous,
// or as p.User. A refused identity is an *ActivationError; a server that
// cannot take an encrypted password fails with ErrNoUserNameToken before
// anything about the user is sent. A session that was created but not
// activated is closed.
func OpenSession(ctx context.Context, ch *Channel, p SessionParams) (*Session, error) {
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	app := p.Application
	if app == nil {
		app = &ua.ApplicationDescription{
			ApplicationURI:  "urn:otopcua:client",
			ProductURI:      "urn:otopcua",
			ApplicationName: ua.NewLocalizedText("otopcua client"),
			ApplicationType: ua.ApplicationTypeClient,
		}
	}
	callTimeout := p.CallTimeout
	resp, err := ch.Call(ctx, &ua.CreateSessionRequest{
		ClientDescription:       app,
		EndpointURL:             ch.Endpoint(),
		SessionName:             p.Name,
		ClientNonce:             nonce,
		ClientCertificate:       ch.clientCertificate(),
		RequestedSessionTimeout: float64(p.Timeout / time.Millisecond),
	}, nil, callTimeout)
	if err != nil {
		return nil, fmt.Errorf("CreateSession: %w", err)
	}
	cs := resp.(*ua.CreateSessionResponse)
	if err := ch.checkServerSignature(nonce, cs); err != nil {
		return nil, err
	}
	clientSig, err := ch.clientSignature(cs.ServerNonce)
	if err != nil {
		return nil, err
	}
	s := &Session{
		ch:        ch,
		auth:      cs.AuthenticationToken,
		ID:        cs.SessionID,
		Timeout:   time.Duration(cs.RevisedSessionTimeout) * time.Millisecond,
		origCert:  cs.ServerCertificate,
		nonce:     cs.ServerNonce,
		endpoints: cs.ServerEndpoints,
		user:      p.User,
	}
	for _, e := range cs.ServerEndpoints {
		if e.Server != nil && e.Server.ApplicationURI != "" {
			s.ServerURI = e.Server.ApplicationURI
			break
		}
	}
	if err := s.activate(ctx, cs, p.User, clientSig, callTimeout); err != nil {
		_ = s.Close(ctx, callTimeout)
		return nil, err
	}
	return s, nil
}

// activate sends ActivateSession with the identity token of user (nil:
// anonymous).
func (s *Session) activate(ctx context.Context, cs *ua.CreateSessionResponse, user *UserName, clientSig *ua.SignatureData, timeout time.Duration) error {
	var tok any = &ua.AnonymousIdentityToken{PolicyID: anonymousPolicyID(cs.ServerEndpoints)}
	name := ""
	if user != nil {
		t, err := userNameToken(user, cs)
		if err != nil {
			return fmt.Errorf("user %q: %w", user.Name, err)
		}
		tok, name = t, user.Name
	}
	return s.sendActivate(ctx, &ua.ActivateSessionRequest{
		ClientSignature:    clientSig,
		LocaleIDs:          []string{},
		UserIdentityToken:  ua.NewExtensionObject(tok),
		UserTokenSignature: &ua.SignatureData{},
	}, name, timeout)
}

// sendActivate sends req on s's channel and keeps the server nonce of the
// answer. A refusal is an *ActivationError.
func (s *Session) sendActivate(ctx context.Context, req *ua.ActivateSessionRequest, name string, timeout time.Duration) error {
	resp, err := s.ch.Call(ctx, req, s.auth, timeout)
	var code ua.StatusCode
	switch {
	case err == nil:
		if n := resp.(*ua.ActivateSessionResponse).ServerNonce; len(n) > 0 {
			s.nonce = n
		}
		return nil
	case errors.As(err, &code) && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrTimeout):
		return &ActivationError{User: name, Code: code}
	}
	return fmt.Errorf("ActivateSession: %w", err)
}

// anonymousPolicyID is the PolicyId of the anonymous token of a None
// endpoint, or "Anonymous" when the server lists none.
func anonymousPolicyID(eps []*ua.EndpointDescription) string {
	for _, e := range eps {
		if e.SecurityPolicyURI != ua.SecurityPolicyURINone {
			continue
		}
		for _, t := range e.UserIdentityTokens {
			if t.TokenType == ua.UserTokenTypeAnonymous {
				return t.PolicyID
			}
		}
	}
	return "Anonymous"
}

// Call is Channel.Call with the session's token.
func (s *Session) Call(ctx context.Context, req ua.Request, timeout time.Duration) (ua.Response, error) {
	return s.ch.Call(ctx, req, s.auth, timeout)
}

// Close sends CloseSession (deleting subscriptions) and waits at most
// timeout for the answer. The channel stays open.
func (s *Session) Close(ctx context.Context, timeout time.Duration) error {
	_, err := s.ch.Call(ctx, &ua.CloseSessionRequest{DeleteSubscriptions: true}, s.auth, timeout)
	return err
}
