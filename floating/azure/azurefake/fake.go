// Package azurefake is a loopback stand-in (HTTPS) for the network
// interface calls of Azure Resource Manager that the floating-address
// executor uses, faithful enough to fail a wrong one:
//
//   - every request must carry "Authorization: Bearer <Options.Token>" and
//     an api-version;
//   - GET of a NIC answers it with its etag (body and ETag header); GET of
//     the collection lists the resource group's NICs;
//   - PUT replaces the whole NIC: a stale If-Match is 412
//     PreconditionFailed; a body without the NIC's location, without a
//     primary ipConfiguration, or with an ipConfiguration without a subnet
//     is 400; an address that another NIC still carries is 400
//     PrivateIPAddressInUse — so a move is two steps, remove then add;
//   - a written NIC reads provisioningState Updating for
//     Options.Provisioning reads, then Succeeded.
//
// Safe for concurrent use (mu).
package azurefake

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// Options configure a Server.
type Options struct {
	// Token is the bearer token accepted.
	Token string
	// Provisioning is how many reads of a NIC after a PUT still show
	// provisioningState Updating.
	Provisioning int
	// AfterGet, when set, runs after a GET of one NIC answered, outside
	// the lock: a test makes a concurrent change there (Touch).
	AfterGet func(name string)
}

// NIC is a network interface of the fake with its primary address.
type NIC struct {
	Name, Subnet, Primary string
}

type stored struct {
	body     map[string]any
	etag     int
	updating int
}

// Server is a running fake; Client trusts its certificate.
type Server struct {
	// URL is the Resource Manager endpoint.
	URL string
	// Client is an HTTPS client that trusts the fake.
	Client *http.Client
	opt    Options
	srv    *httptest.Server

	mu    sync.Mutex
	nics  map[string]*stored // by name; mu must be held.
	seq   int                // etags; mu must be held.
	calls map[string]int     // "GET", "LIST", "PUT"; mu must be held.
	log   []string           // requests served, in order; mu must be held.
}

// New starts a fake on loopback; Close stops it.
func New(opt Options) *Server {
	s := &Server{opt: opt, nics: map[string]*stored{}, calls: map[string]int{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	s.URL, s.Client = s.srv.URL, s.srv.Client()
	return s
}

// Close stops the listener.
func (s *Server) Close() { s.srv.Close() }

// AddNIC adds a NIC with one primary ipConfiguration and a field the
// executor does not know (enableAcceleratedNetworking), which a PUT must
// carry back.
func (s *Server) AddNIC(n NIC) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.nics[n.Name] = &stored{etag: s.seq, body: map[string]any{
		"name":     n.Name,
		"location": "westeurope",
		"tags":     map[string]any{},
		"properties": map[string]any{
			"enableAcceleratedNetworking": true,
			"ipConfigurations":            []any{ipConfig("ipconfig1", n.Primary, n.Subnet, true)},
		},
	}}
}

func ipConfig(name, ip, subnet string, primary bool) map[string]any {
	return map[string]any{"name": name, "properties": map[string]any{
		"privateIPAddress": ip, "privateIPAllocationMethod": "Static", "primary": primary,
		"subnet": map[string]any{"id": subnet},
	}}
}

// Place adds a secondary ipConfiguration for ip to NIC name (set-up).
func (s *Server) Place(name, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nics[name]
	props := n.body["properties"].(map[string]any)
	subnet := configs(n.body)[0].(map[string]any)["properties"].(map[string]any)["subnet"].(map[string]any)["id"].(string)
	props["ipConfigurations"] = append(configs(n.body), ipConfig("floating", ip, subnet, false))
	s.seq++
	n.etag = s.seq
}

// Holder is the NIC that carries ip ("" none).
func (s *Server) Holder(ip string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holderLocked(ip, "")
}

// Tag is the value of tag key on NIC name.
func (s *Server) Tag(name, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _ := s.nics[name].body["tags"].(map[string]any)[key].(string)
	return v
}

// SetTag sets tag key on NIC name, as another writer would (a new etag).
func (s *Server) SetTag(name, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nics[name]
	n.body["tags"].(map[string]any)[key] = value
	s.seq++
	n.etag = s.seq
}

// Touch changes NIC name's etag, as a concurrent writer would.
func (s *Server) Touch(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.nics[name].etag = s.seq
}

// Field is a top-level property of NIC name (to check a PUT kept it).
func (s *Server) Field(name, property string) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nics[name].body["properties"].(map[string]any)[property]
}

// Calls counts the requests of kind ("GET", "LIST", "PUT"; "" all).
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind != "" {
		return s.calls[kind]
	}
	return s.calls["GET"] + s.calls["LIST"] + s.calls["PUT"]
}

// Log returns the requests served so far, one line each: method, NIC
// (or the resource group's collection), and for a PUT its If-Match, the addresses of its
// ipConfigurations and its tags.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func logLine(r *http.Request, name string, body []byte) string {
	line := r.Method + " " + name
	if name == "" {
		line = r.Method + " (resource group)"
	}
	if r.Method != http.MethodPut {
		return line
	}
	var in map[string]any
	json.Unmarshal(body, &in)
	var ips []string
	for _, c := range configs(in) {
		ip, _, _ := configIP(c)
		ips = append(ips, ip)
	}
	tags, _ := json.Marshal(in["tags"])
	return fmt.Sprintf("%s If-Match=%s ipConfigurations=%s tags=%s", line, r.Header.Get("If-Match"), strings.Join(ips, ","), tags)
}

func configs(body map[string]any) []any {
	p, _ := body["properties"].(map[string]any)
	c, _ := p["ipConfigurations"].([]any)
	return c
}

func configIP(c any) (ip, subnet string, primary bool) {
	m, _ := c.(map[string]any)
	p, _ := m["properties"].(map[string]any)
	ip, _ = p["privateIPAddress"].(string)
	primary, _ = p["primary"].(bool)
	sn, _ := p["subnet"].(map[string]any)
	subnet, _ = sn["id"].(string)
	return ip, subnet, primary
}

// holderLocked is the NIC other than except that carries ip: mu must be
// held.
func (s *Server) holderLocked(ip, except string) string {
	names := make([]string, 0, len(s.nics))
	for name := range s.nics {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, c := range configs(s.nics[name].body) {
			if a, _, _ := configIP(c); a == ip && name != except {
				return name
			}
		}
	}
	return ""
}

type armError struct {
	status int
	Error  struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func fail(status int, code, format string, args ...any) *armError {
	e := &armError{status: status}
	e.Error.Code, e.Error.Message = code, fmt.Sprintf(format, args...)
	return e
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("Authorization") != "Bearer "+s.opt.Token {
		writeJSON(w, 401, fail(401, "AuthenticationFailed", "missing or wrong bearer token"))
		return
	}
	if r.URL.Query().Get("api-version") == "" {
		writeJSON(w, 400, fail(400, "MissingApiVersionParameter", "the api-version query parameter is required"))
		return
	}
	_, rest, ok := strings.Cut(r.URL.Path, "/providers/Microsoft.Network/networkInterfaces")
	if !ok {
		writeJSON(w, 404, fail(404, "InvalidResourceType", "no such resource type"))
		return
	}
	name := strings.TrimPrefix(rest, "/")
	status, out := s.act(r, name, body)
	writeJSON(w, status, out)
	if r.Method == http.MethodGet && name != "" && s.opt.AfterGet != nil {
		s.opt.AfterGet(name)
	}
}

func (s *Server) act(r *http.Request, name string, body []byte) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, logLine(r, name, body))
	switch {
	case r.Method == http.MethodGet && name == "":
		s.calls["LIST"]++
		return s.listLocked()
	case r.Method == http.MethodGet:
		s.calls["GET"]++
		n := s.nics[name]
		if n == nil {
			return 404, fail(404, "ResourceNotFound", "NIC %s not found", name)
		}
		return 200, s.viewLocked(name, n, true)
	case r.Method == http.MethodPut:
		s.calls["PUT"]++
		return s.putLocked(name, r.Header.Get("If-Match"), body)
	}
	return 405, fail(405, "MethodNotAllowed", "%s", r.Method)
}

// viewLocked is the NIC as a read shows it; a read counts down its
// provisioning. mu must be held.
func (s *Server) viewLocked(name string, n *stored, count bool) map[string]any {
	b, _ := json.Marshal(n.body)
	var out map[string]any
	json.Unmarshal(b, &out)
	out["etag"] = etag(n.etag)
	out["id"] = "/networkInterfaces/" + name
	state := "Succeeded"
	if n.updating > 0 {
		state = "Updating"
		if count {
			n.updating--
		}
	}
	out["properties"].(map[string]any)["provisioningState"] = state
	return out
}

func etag(n int) string { return fmt.Sprintf(`W/"%d"`, n) }

func (s *Server) listLocked() (int, any) {
	names := make([]string, 0, len(s.nics))
	for name := range s.nics {
		names = append(names, name)
	}
	slices.Sort(names)
	value := []any{}
	for _, name := range names {
		value = append(value, s.viewLocked(name, s.nics[name], false))
	}
	return 200, map[string]any{"value": value}
}

func (s *Server) putLocked(name, ifMatch string, body []byte) (int, any) {
	n := s.nics[name]
	if n == nil {
		return 404, fail(404, "ResourceNotFound", "this fake does not create NICs")
	}
	if ifMatch != "" && ifMatch != etag(n.etag) {
		return 412, fail(412, "PreconditionFailed", "the If-Match %s does not match the NIC's etag %s", ifMatch, etag(n.etag))
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		return 400, fail(400, "InvalidRequestFormat", "%v", err)
	}
	if e := s.validateLocked(name, n, in); e != nil {
		return e.status, e
	}
	delete(in, "etag")
	delete(in, "id")
	delete(in["properties"].(map[string]any), "provisioningState")
	s.seq++
	n.body, n.etag, n.updating = in, s.seq, s.opt.Provisioning
	return 200, s.viewLocked(name, n, false)
}

func (s *Server) validateLocked(name string, n *stored, in map[string]any) *armError {
	if in["location"] != n.body["location"] {
		return fail(400, "LocationRequired", "the NIC's location must be given and cannot change")
	}
	primaries := 0
	for _, c := range configs(in) {
		ip, subnet, primary := configIP(c)
		if primary {
			primaries++
		}
		if subnet == "" {
			return fail(400, "InvalidRequestFormat", "ipConfiguration of %s has no subnet", ip)
		}
		if other := s.holderLocked(ip, name); other != "" {
			return fail(400, "PrivateIPAddressInUse", "IP configuration of %s: private IP %s is in use by %s", name, ip, other)
		}
	}
	if primaries != 1 {
		return fail(400, "NicMustHaveOnePrimaryIpConfiguration", "NIC %s must have one primary ipConfiguration", name)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if e, ok := v.(*armError); ok {
		w.Header().Set("x-ms-error-code", e.Error.Code)
	}
	if m, ok := v.(map[string]any); ok {
		if e, ok := m["etag"].(string); ok {
			w.Header().Set("ETag", e)
		}
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
