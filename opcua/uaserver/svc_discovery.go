package uaserver

import (
	"slices"

	"github.com/gopcua/opcua/ua"
)

const (
	// uaTCPProfile is the transport profile of opc.tcp with UA binary.
	uaTCPProfile = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary"
	// anonymousPolicyID is the PolicyId of the anonymous user token policy.
	anonymousPolicyID = "anonymous"
)

// selfDescription describes this server, as identity id, with
// discoveryURL as its only DiscoveryUrl.
func (s *Server) selfDescription(id *appIdentity, discoveryURL string) *ua.ApplicationDescription {
	return &ua.ApplicationDescription{
		ApplicationURI:  id.uri,
		ProductURI:      s.cfg.ProductURI,
		ApplicationName: ua.NewLocalizedText(s.cfg.ApplicationName),
		ApplicationType: ua.ApplicationTypeServer,
		DiscoveryURLs:   []string{discoveryURL},
	}
}

// endpointsFor returns the server's endpoints, one per offered
// Security.Endpoints entry, as seen by a client that dialled clientURL: the
// advertised URL with the client's host name, so a client that reached us
// as localhost is not sent to a name it cannot resolve. An empty clientURL
// gets the advertised URL. id is the identity of the channel asking: its
// ApplicationUri and certificate describe the server.
func (s *Server) endpointsFor(id *appIdentity, clientURL string) []*ua.EndpointDescription {
	url := withHost(s.EndpointURL(), clientURL)
	cert := id.certificate()
	eps := make([]*ua.EndpointDescription, 0, len(s.cfg.Security.Endpoints))
	for _, e := range s.cfg.Security.Endpoints {
		eps = append(eps, &ua.EndpointDescription{
			EndpointURL:         url,
			Server:              s.selfDescription(id, url),
			ServerCertificate:   cert,
			SecurityMode:        e.Mode,
			SecurityPolicyURI:   e.PolicyURI,
			UserIdentityTokens:  s.userTokenPolicies(id),
			TransportProfileURI: uaTCPProfile,
			SecurityLevel:       securityLevel(e),
		})
	}
	return eps
}

// getEndpoints implements GetEndpoints (Part 4 §5.4.4).
func (s *Server) getEndpoints(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.GetEndpointsRequest](c)
	if err != nil {
		return nil, err
	}
	eps := s.endpointsFor(c.ch.ident, req.EndpointURL)
	if len(req.ProfileURIs) > 0 && !slices.Contains(req.ProfileURIs, uaTCPProfile) {
		eps = []*ua.EndpointDescription{}
	}
	return &ua.GetEndpointsResponse{Endpoints: eps}, nil
}

// findServers implements FindServers (Part 4 §5.4.2): this server first,
// then every configured peer, filtered by ServerUris when given. This
// server is described with the identity of the channel asking.
func (s *Server) findServers(c *call) (ua.Response, error) {
	req, err := reqAs[*ua.FindServersRequest](c)
	if err != nil {
		return nil, err
	}
	all := []*ua.ApplicationDescription{s.selfDescription(c.ch.ident, withHost(s.EndpointURL(), req.EndpointURL))}
	for _, p := range s.cfg.Peers {
		name := p.ApplicationName
		if name == "" {
			name = p.ApplicationURI
		}
		d := &ua.ApplicationDescription{
			ApplicationURI:  p.ApplicationURI,
			ProductURI:      s.cfg.ProductURI,
			ApplicationName: ua.NewLocalizedText(name),
			ApplicationType: ua.ApplicationTypeServer,
			DiscoveryURLs:   []string{},
		}
		if p.DiscoveryURL != "" {
			d.DiscoveryURLs = []string{p.DiscoveryURL}
		}
		all = append(all, d)
	}
	out := make([]*ua.ApplicationDescription, 0, len(all))
	for _, d := range all {
		if len(req.ServerURIs) == 0 || slices.Contains(req.ServerURIs, d.ApplicationURI) {
			out = append(out, d)
		}
	}
	return &ua.FindServersResponse{Servers: out}, nil
}
