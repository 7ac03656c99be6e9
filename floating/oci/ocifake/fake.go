// Package ocifake is a loopback stand-in for the private IP calls of the
// OCI Core Services API that the floating-address executor uses, faithful
// enough to fail a wrong one:
//
//   - requests must carry an HTTP signature (version 1, rsa-sha256) over
//     date, (request-target) and host, and for a body also content-length,
//     content-type and x-content-sha256; with Options.PublicKey set the
//     signature is verified and the body hash checked;
//   - GetVnic (its subnetId); ListPrivateIps (by subnetId + ipAddress, or vnicId), GetPrivateIp
//     (with an ETag), CreatePrivateIp (409 Conflict for an address already
//     assigned in the subnet), UpdatePrivateIp (moves the object to another
//     VNIC of the same subnet; never a primary IP), DeletePrivateIp (never a
//     primary IP); If-Match on update and delete, a stale ETag is 412
//     NoEtagMatch.
//
// `assign-private-ip --unassign-if-already-assigned` is the client's
// composition of these calls (list, then update), which is what the
// executor must do. Safe for concurrent use (mu).
package ocifake

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Options configure a Server.
type Options struct {
	// KeyID and PublicKey, when PublicKey is set, are the only signing key
	// accepted (keyId "tenancy/user/fingerprint").
	KeyID     string
	PublicKey *rsa.PublicKey
	// AfterGet, when set, runs after GetPrivateIp answered, outside the
	// lock: a test makes a concurrent change there (Touch).
	AfterGet func(id string)
}

// VNIC is a VNIC of the fake with its primary IP.
type VNIC struct {
	ID, Subnet, Primary string
}

// PrivateIP is a private IP object as the API shows it.
type PrivateIP struct {
	ID           string            `json:"id"`
	VnicID       string            `json:"vnicId"`
	SubnetID     string            `json:"subnetId"`
	IPAddress    string            `json:"ipAddress"`
	IsPrimary    bool              `json:"isPrimary"`
	FreeformTags map[string]string `json:"freeformTags"`
	etag         int
}

// Server is a running fake at URL.
type Server struct {
	URL string
	opt Options
	srv *httptest.Server

	mu    sync.Mutex
	vnics map[string]VNIC       // mu must be held.
	ips   map[string]*PrivateIP // by id; mu must be held.
	seq   int                   // ids and etags; mu must be held.
	calls map[string]int        // "GET vnic", "GET list", "GET", "POST", "PUT", "DELETE"; mu must be held.
	log   []string              // requests served, in order; mu must be held.
}

// New starts a fake on loopback; Close stops it.
func New(opt Options) *Server {
	s := &Server{opt: opt, vnics: map[string]VNIC{}, ips: map[string]*PrivateIP{}, calls: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the listener.
func (s *Server) Close() { s.srv.Close() }

// AddVNIC adds a VNIC and its primary IP object.
func (s *Server) AddVNIC(v VNIC) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vnics[v.ID] = v
	s.newIPLocked(v.ID, v.Primary, true, nil)
}

// Place creates a secondary private IP ip on vnic with tags (set-up).
func (s *Server) Place(vnic, ip string, tags map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.newIPLocked(vnic, ip, false, tags)
}

// Holder is the VNIC that holds ip ("" none).
func (s *Server) Holder(ip string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byAddressLocked(s.subnetOfLocked(ip), ip); p != nil {
		return p.VnicID
	}
	return ""
}

// Tags are the freeform tags of the object of ip.
func (s *Server) Tags(ip string) map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byAddressLocked(s.subnetOfLocked(ip), ip); p != nil {
		return p.FreeformTags
	}
	return nil
}

// Touch changes the object of ip's ETag, as another writer would.
func (s *Server) Touch(ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.byAddressLocked(s.subnetOfLocked(ip), ip); p != nil {
		s.seq++
		p.etag = s.seq
	}
}

// Calls counts the requests of kind ("GET vnic", "GET list", "GET",
// "POST", "PUT", "DELETE"; "" all).
func (s *Server) Calls(kind string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kind != "" {
		return s.calls[kind]
	}
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

// Log returns the requests served so far, one line each: method, path
// and query, If-Match, body.
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func logLine(r *http.Request, body []byte) string {
	line := r.Method + " " + r.URL.RequestURI()
	if m := r.Header.Get("If-Match"); m != "" {
		line += " If-Match=" + m
	}
	if len(body) > 0 {
		line += " " + strings.TrimSpace(string(body))
	}
	return line
}

// Writes counts the requests that change something.
func (s *Server) Writes() int {
	return s.Calls("POST") + s.Calls("PUT") + s.Calls("DELETE")
}

func (s *Server) newIPLocked(vnic, ip string, primary bool, tags map[string]string) *PrivateIP {
	s.seq++
	p := &PrivateIP{ID: "ocid1.privateip." + strconv.Itoa(s.seq), VnicID: vnic, SubnetID: s.vnics[vnic].Subnet, IPAddress: ip, IsPrimary: primary, FreeformTags: tags, etag: s.seq}
	if p.FreeformTags == nil {
		p.FreeformTags = map[string]string{}
	}
	s.ips[p.ID] = p
	return p
}

// subnetOfLocked: the fake's addresses are unique across subnets.
func (s *Server) subnetOfLocked(ip string) string {
	for _, p := range s.ips {
		if p.IPAddress == ip {
			return p.SubnetID
		}
	}
	return ""
}

func (s *Server) byAddressLocked(subnet, ip string) *PrivateIP {
	for _, p := range s.ips {
		if p.SubnetID == subnet && p.IPAddress == ip {
			return p
		}
	}
	return nil
}

type svcError struct {
	status        int
	Code, Message string
}

func fail(status int, code, format string, args ...any) *svcError {
	return &svcError{status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

const base = "/20160918/privateIps"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if e := s.verify(r, body); e != nil {
		writeJSON(w, e.status, e, "")
		return
	}
	if vnic, ok := strings.CutPrefix(r.URL.Path, "/20160918/vnics/"); ok && r.Method == http.MethodGet {
		s.serveVNIC(w, vnic)
		return
	}
	id, one := strings.CutPrefix(r.URL.Path, base+"/")
	if !one && r.URL.Path != base {
		writeJSON(w, 404, fail(404, "NotAuthorizedOrNotFound", "no such path"), "")
		return
	}
	kind := r.Method
	if r.Method == http.MethodGet && !one {
		kind = "GET list"
	}
	s.mu.Lock()
	s.calls[kind]++
	s.log = append(s.log, logLine(r, body))
	status, out, etag, e := s.actLocked(kind, id, r, body)
	s.mu.Unlock()
	if e != nil {
		writeJSON(w, e.status, e, "")
		return
	}
	writeJSON(w, status, out, etag)
	if kind == "GET" && s.opt.AfterGet != nil {
		s.opt.AfterGet(id)
	}
}

// serveVNIC is GetVnic.
func (s *Server) serveVNIC(w http.ResponseWriter, id string) {
	s.mu.Lock()
	s.calls["GET vnic"]++
	s.log = append(s.log, "GET /20160918/vnics/"+id)
	v, ok := s.vnics[id]
	s.mu.Unlock()
	if !ok {
		writeJSON(w, 404, fail(404, "NotAuthorizedOrNotFound", "VNIC %s not found", id), "")
		return
	}
	writeJSON(w, 200, map[string]any{"id": v.ID, "subnetId": v.Subnet, "privateIp": v.Primary, "isPrimary": true}, "")
}

// actLocked serves one call: mu must be held.
func (s *Server) actLocked(kind, id string, r *http.Request, body []byte) (int, any, string, *svcError) {
	switch kind {
	case "GET list":
		return s.listLocked(r)
	case "POST":
		return s.createLocked(body)
	}
	p := s.ips[id]
	if p == nil {
		return 0, nil, "", fail(404, "NotAuthorizedOrNotFound", "private IP %s not found", id)
	}
	if kind == "GET" {
		return 200, p, strconv.Itoa(p.etag), nil
	}
	if m := r.Header.Get("If-Match"); m != "" && m != strconv.Itoa(p.etag) {
		return 0, nil, "", fail(412, "NoEtagMatch", "the If-Match ETag %s does not match the resource's %d", m, p.etag)
	}
	if kind == "DELETE" {
		if p.IsPrimary {
			return 0, nil, "", fail(400, "InvalidParameter", "a VNIC's primary private IP cannot be deleted")
		}
		delete(s.ips, id)
		return 204, nil, "", nil
	}
	return s.updateLocked(p, body)
}

func (s *Server) listLocked(r *http.Request) (int, any, string, *svcError) {
	q := r.URL.Query()
	subnet, ip, vnic := q.Get("subnetId"), q.Get("ipAddress"), q.Get("vnicId")
	if subnet == "" && vnic == "" {
		return 0, nil, "", fail(400, "MissingParameter", "one of subnetId or vnicId is required")
	}
	out := []*PrivateIP{}
	for _, p := range s.ips {
		if (subnet == "" || p.SubnetID == subnet) && (ip == "" || p.IPAddress == ip) && (vnic == "" || p.VnicID == vnic) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *PrivateIP) int { return strings.Compare(a.ID, b.ID) })
	return 200, out, "", nil
}

type writeBody struct {
	VnicID       string            `json:"vnicId"`
	IPAddress    string            `json:"ipAddress"`
	FreeformTags map[string]string `json:"freeformTags"`
}

func (s *Server) createLocked(body []byte) (int, any, string, *svcError) {
	var in writeBody
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, nil, "", fail(400, "InvalidParameter", "%v", err)
	}
	v, ok := s.vnics[in.VnicID]
	if !ok {
		return 0, nil, "", fail(404, "NotAuthorizedOrNotFound", "VNIC %s not found", in.VnicID)
	}
	if s.byAddressLocked(v.Subnet, in.IPAddress) != nil {
		return 0, nil, "", fail(409, "Conflict", "IP address %s is already assigned in subnet %s", in.IPAddress, v.Subnet)
	}
	p := s.newIPLocked(in.VnicID, in.IPAddress, false, in.FreeformTags)
	return 200, p, strconv.Itoa(p.etag), nil
}

func (s *Server) updateLocked(p *PrivateIP, body []byte) (int, any, string, *svcError) {
	var in writeBody
	if err := json.Unmarshal(body, &in); err != nil {
		return 0, nil, "", fail(400, "InvalidParameter", "%v", err)
	}
	if in.VnicID != "" && in.VnicID != p.VnicID {
		v, ok := s.vnics[in.VnicID]
		switch {
		case !ok:
			return 0, nil, "", fail(404, "NotAuthorizedOrNotFound", "VNIC %s not found", in.VnicID)
		case p.IsPrimary:
			return 0, nil, "", fail(400, "InvalidParameter", "a VNIC's primary private IP cannot be moved")
		case v.Subnet != p.SubnetID:
			return 0, nil, "", fail(400, "InvalidParameter", "VNIC %s is not in subnet %s", in.VnicID, p.SubnetID)
		}
		p.VnicID = in.VnicID
	}
	if in.FreeformTags != nil {
		p.FreeformTags = in.FreeformTags
	}
	s.seq++
	p.etag = s.seq
	return 200, p, strconv.Itoa(p.etag), nil
}

func writeJSON(w http.ResponseWriter, status int, v any, etag string) {
	if etag != "" {
		w.Header().Set("ETag", etag)
	}
	if status == http.StatusNoContent {
		w.WriteHeader(status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// verify checks the request's HTTP signature.
func (s *Server) verify(r *http.Request, body []byte) *svcError {
	params := map[string]string{}
	rest, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Signature ")
	if !ok {
		return fail(401, "NotAuthenticated", "the required information to complete authentication was not provided")
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(kv, "=")
		params[k] = strings.Trim(v, `"`)
	}
	headers := strings.Fields(params["headers"])
	need := []string{"date", "(request-target)", "host"}
	if len(body) > 0 {
		need = append(need, "content-length", "content-type", "x-content-sha256")
		sum := sha256.Sum256(body)
		if r.Header.Get("x-content-sha256") != base64.StdEncoding.EncodeToString(sum[:]) {
			return fail(401, "NotAuthenticated", "x-content-sha256 does not match the body")
		}
	}
	for _, h := range need {
		if !slices.Contains(headers, h) {
			return fail(401, "NotAuthenticated", "the signature does not cover %s", h)
		}
	}
	if s.opt.PublicKey == nil {
		return nil
	}
	if params["keyId"] != s.opt.KeyID {
		return fail(401, "NotAuthenticated", "unknown key %s", params["keyId"])
	}
	sig, err := base64.StdEncoding.DecodeString(params["signature"])
	if err != nil {
		return fail(401, "NotAuthenticated", "signature: %v", err)
	}
	sum := sha256.Sum256([]byte(signingString(r, headers)))
	if err := rsa.VerifyPKCS1v15(s.opt.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return fail(401, "NotAuthenticated", "the signature does not verify")
	}
	return nil
}

func signingString(r *http.Request, headers []string) string {
	parts := make([]string, len(headers))
	for i, h := range headers {
		v := r.Header.Get(h)
		switch h {
		case "(request-target)":
			v = strings.ToLower(r.Method) + " " + r.URL.RequestURI()
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		}
		parts[i] = h + ": " + v
	}
	return strings.Join(parts, "\n")
}
