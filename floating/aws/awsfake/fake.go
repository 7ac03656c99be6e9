// Package awsfake is a loopback stand-in for the parts of EC2 that the
// floating-address executor uses, faithful enough to fail a wrong one:
//
//   - the Query API (SigV4-signed POSTs, checked against the configured
//     key when one is set): DescribeNetworkInterfaces (ids, the filters
//     addresses.private-ip-address, vpc-id and subnet-id),
//     AssignPrivateIpAddresses, UnassignPrivateIpAddresses, CreateTags,
//     with EC2's documented error codes (PrivateIpAddressInUse for an
//     address assigned elsewhere without AllowReassignment,
//     InvalidParameterValue, InvalidNetworkInterfaceID.NotFound);
//   - instance metadata with IMDSv2 only (a PUT for a token, then GETs that
//     carry it), whose network/interfaces/macs/<mac>/local-ipv4s trails
//     the API by Options.Lag, as the remapping of a secondary address is
//     asynchronous on EC2.
//
// Both listen on loopback. Safe for concurrent use (mu).
package awsfake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Options configure a Server.
type Options struct {
	// Region is the region signatures are checked for. Default us-east-1.
	Region string
	// AccessKey and SecretKey, when set, are the only credentials whose
	// signatures the API accepts; unset, any signed request is accepted.
	AccessKey, SecretKey string
	// Lag is how long instance metadata trails the API after a change.
	Lag time.Duration
	// Now is the server's clock. Default time.Now.
	Now func() time.Time
	// BeforeAction, when set, runs before an API action is served, outside
	// the lock: a test makes a concurrent change there (Place).
	BeforeAction func(action string)
}

// ENI is a network interface of the fake.
type ENI struct {
	ID, MAC, VPC, Subnet string
	// Primary is the primary private address (never moved).
	Primary string
}

type eni struct {
	ENI
	secondary []string
	tags      map[string]string
	meta      []metaChange
}

// metaChange is the address list the API gave an interface at one instant;
// metadata shows it Lag later.
type metaChange struct {
	at  time.Time
	ips []string
}

// Server is a running fake: the EC2 API at EC2URL, metadata at
// MetadataURL.
type Server struct {
	EC2URL, MetadataURL string

	opt     Options
	ec2srv  *httptest.Server
	metasrv *httptest.Server

	mu     sync.Mutex
	enis   map[string]*eni // by id; mu must be held.
	tokens map[string]bool // IMDSv2 tokens issued; mu must be held.
	calls  map[string]int  // API actions served; mu must be held.
	log    []string        // API requests served, in order; mu must be held.
}

// New starts a fake on loopback; Close stops it.
func New(opt Options) *Server {
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	s := &Server{opt: opt, enis: map[string]*eni{}, tokens: map[string]bool{}, calls: map[string]int{}}
	s.ec2srv = httptest.NewServer(http.HandlerFunc(s.serveEC2))
	s.metasrv = httptest.NewServer(http.HandlerFunc(s.serveMetadata))
	s.EC2URL, s.MetadataURL = s.ec2srv.URL, s.metasrv.URL
	return s
}

// Close stops both listeners.
func (s *Server) Close() {
	s.ec2srv.Close()
	s.metasrv.Close()
}

// AddENI adds an interface holding only its primary address.
func (s *Server) AddENI(n ENI) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := &eni{ENI: n, tags: map[string]string{}}
	e.meta = []metaChange{{ips: e.ips()}}
	s.enis[n.ID] = e
}

// Place puts ip on the interface id as a secondary address at once (the
// set-up of a test: metadata shows it without lag), taking it from any
// other interface.
func (s *Server) Place(id, ip string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.enis {
		e.remove(ip)
		e.meta = []metaChange{{ips: e.ips()}}
	}
	e := s.enis[id]
	e.secondary = append(e.secondary, ip)
	e.meta = []metaChange{{ips: e.ips()}}
}

// Holder is the interface that lists ip ("" none).
func (s *Server) Holder(ip string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.holderLocked(ip); h != nil {
		return h.ID
	}
	return ""
}

// Tag is the value of tag key on interface id.
func (s *Server) Tag(id, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enis[id].tags[key]
}

// SetTag sets tag key on interface id, as another writer would.
func (s *Server) SetTag(id, key, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enis[id].tags[key] = value
}

// Calls is how many times the API served action ("" every action).
func (s *Server) Calls(action string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if action != "" {
		return s.calls[action]
	}
	n := 0
	for _, c := range s.calls {
		n += c
	}
	return n
}

func (e *eni) ips() []string { return append([]string{e.Primary}, e.secondary...) }

func (e *eni) lists(ip string) bool { return e.Primary == ip || slices.Contains(e.secondary, ip) }

func (e *eni) remove(ip string) bool {
	i := slices.Index(e.secondary, ip)
	if i < 0 {
		return false
	}
	e.secondary = slices.Delete(e.secondary, i, i+1)
	return true
}

// holderLocked: mu must be held.
func (s *Server) holderLocked(ip string) *eni {
	for _, e := range s.enis {
		if e.lists(ip) {
			return e
		}
	}
	return nil
}

// apiError is an EC2 error answer.
type apiError struct {
	status        int
	code, message string
}

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, message: fmt.Sprintf(format, args...)}
}

func (s *Server) serveEC2(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost {
		writeError(w, fail(400, "InvalidAction", "the Query API takes POST"))
		return
	}
	if e := s.verify(r, body); e != nil {
		writeError(w, e)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		writeError(w, fail(400, "MalformedQueryString", "%v", err))
		return
	}
	if s.opt.BeforeAction != nil {
		s.opt.BeforeAction(form.Get("Action"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[form.Get("Action")]++
	s.log = append(s.log, logLine(form))
	out, e := s.actLocked(form)
	if e != nil {
		writeError(w, e)
		return
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	io.WriteString(w, out)
}

// actLocked serves one action: mu must be held.
func (s *Server) actLocked(f url.Values) (string, *apiError) {
	switch f.Get("Action") {
	case "DescribeNetworkInterfaces":
		return s.describeLocked(f)
	case "AssignPrivateIpAddresses":
		return s.assignLocked(f)
	case "UnassignPrivateIpAddresses":
		return s.unassignLocked(f)
	case "CreateTags":
		return s.createTagsLocked(f)
	}
	return "", fail(400, "InvalidAction", "the action %q is not valid for this web service", f.Get("Action"))
}

// verify checks the SigV4 signature by signing the same request again.
func (s *Server) verify(r *http.Request, body []byte) *apiError {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=") {
		return fail(401, "AuthFailure", "AWS was not able to validate the provided access credentials")
	}
	if s.opt.AccessKey == "" {
		return nil
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return fail(400, "AuthFailure", "X-Amz-Date: %v", err)
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), strings.NewReader(string(body)))
	again.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	if tok := r.Header.Get("X-Amz-Security-Token"); tok != "" {
		again.Header.Set("X-Amz-Security-Token", tok)
	}
	sum := sha256.Sum256(body)
	creds := awssdk.Credentials{AccessKeyID: s.opt.AccessKey, SecretAccessKey: s.opt.SecretKey, SessionToken: r.Header.Get("X-Amz-Security-Token")}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "ec2", s.opt.Region, at); err != nil {
		return fail(500, "InternalError", "%v", err)
	}
	if again.Header.Get("Authorization") != auth {
		return fail(401, "SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided")
	}
	return nil
}

func (s *Server) describeLocked(f url.Values) (string, *apiError) {
	ids := indexed(f, "NetworkInterfaceId")
	for _, id := range ids {
		if s.enis[id] == nil {
			return "", fail(400, "InvalidNetworkInterfaceID.NotFound", "the networkInterface ID '%s' does not exist", id)
		}
	}
	filters := map[string][]string{}
	for i := 1; f.Has("Filter." + strconv.Itoa(i) + ".Name"); i++ {
		p := "Filter." + strconv.Itoa(i)
		filters[f.Get(p+".Name")] = indexed(f, p+".Value")
	}
	var b strings.Builder
	b.WriteString("<DescribeNetworkInterfacesResponse><requestId>r</requestId><networkInterfaceSet>")
	for _, id := range s.sortedIDsLocked() {
		e := s.enis[id]
		if (len(ids) == 0 || slices.Contains(ids, id)) && e.matches(filters) {
			e.writeXML(&b)
		}
	}
	b.WriteString("</networkInterfaceSet></DescribeNetworkInterfacesResponse>")
	return b.String(), nil
}

func (s *Server) sortedIDsLocked() []string {
	ids := make([]string, 0, len(s.enis))
	for id := range s.enis {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (e *eni) matches(filters map[string][]string) bool {
	for name, values := range filters {
		ok := false
		for _, v := range values {
			switch name {
			case "addresses.private-ip-address":
				ok = ok || e.lists(v)
			case "vpc-id":
				ok = ok || e.VPC == v
			case "subnet-id":
				ok = ok || e.Subnet == v
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (e *eni) writeXML(b *strings.Builder) {
	fmt.Fprintf(b, "<item><networkInterfaceId>%s</networkInterfaceId><macAddress>%s</macAddress><vpcId>%s</vpcId><subnetId>%s</subnetId><privateIpAddressesSet>", e.ID, e.MAC, e.VPC, e.Subnet)
	for i, ip := range e.ips() {
		fmt.Fprintf(b, "<item><privateIpAddress>%s</privateIpAddress><primary>%t</primary></item>", ip, i == 0)
	}
	b.WriteString("</privateIpAddressesSet><tagSet>")
	keys := make([]string, 0, len(e.tags))
	for k := range e.tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "<item><key>%s</key><value>%s</value></item>", k, e.tags[k])
	}
	b.WriteString("</tagSet></item>")
}

// assignLocked: EC2 refuses an address held by another interface unless
// AllowReassignment is true, and never moves a primary address.
func (s *Server) assignLocked(f url.Values) (string, *apiError) {
	target := s.enis[f.Get("NetworkInterfaceId")]
	if target == nil {
		return "", fail(400, "InvalidNetworkInterfaceID.NotFound", "the networkInterface ID '%s' does not exist", f.Get("NetworkInterfaceId"))
	}
	allow := f.Get("AllowReassignment") == "true"
	ips := indexed(f, "PrivateIpAddress")
	for _, ip := range ips {
		h := s.holderLocked(ip)
		switch {
		case h == nil || h == target:
		case h.Primary == ip:
			return "", fail(400, "InvalidParameterValue", "address %s is the primary private IP of %s", ip, h.ID)
		case !allow:
			return "", fail(400, "PrivateIpAddressInUse", "the address %s is in use by %s", ip, h.ID)
		case h.Subnet != target.Subnet:
			return "", fail(400, "InvalidParameterValue", "address %s is not in the subnet of %s", ip, target.ID)
		}
	}
	now := s.opt.Now()
	for _, ip := range ips {
		if h := s.holderLocked(ip); h != nil && h != target {
			h.remove(ip)
			h.meta = append(h.meta, metaChange{at: now, ips: h.ips()})
		}
		if !target.lists(ip) {
			target.secondary = append(target.secondary, ip)
		}
	}
	target.meta = append(target.meta, metaChange{at: now, ips: target.ips()})
	return "<AssignPrivateIpAddressesResponse><requestId>r</requestId><return>true</return></AssignPrivateIpAddressesResponse>", nil
}

func (s *Server) unassignLocked(f url.Values) (string, *apiError) {
	e := s.enis[f.Get("NetworkInterfaceId")]
	if e == nil {
		return "", fail(400, "InvalidNetworkInterfaceID.NotFound", "the networkInterface ID '%s' does not exist", f.Get("NetworkInterfaceId"))
	}
	ips := indexed(f, "PrivateIpAddress")
	for _, ip := range ips {
		if !slices.Contains(e.secondary, ip) {
			return "", fail(400, "InvalidParameterValue", "some of the specified addresses are not assigned to interface %s", e.ID)
		}
	}
	for _, ip := range ips {
		e.remove(ip)
	}
	e.meta = append(e.meta, metaChange{at: s.opt.Now(), ips: e.ips()})
	return "<UnassignPrivateIpAddressesResponse><requestId>r</requestId><return>true</return></UnassignPrivateIpAddressesResponse>", nil
}

func (s *Server) createTagsLocked(f url.Values) (string, *apiError) {
	ids := indexed(f, "ResourceId")
	for _, id := range ids {
		if s.enis[id] == nil {
			return "", fail(400, "InvalidNetworkInterfaceID.NotFound", "the networkInterface ID '%s' does not exist", id)
		}
	}
	for _, id := range ids {
		for i := 1; f.Has("Tag." + strconv.Itoa(i) + ".Key"); i++ {
			p := "Tag." + strconv.Itoa(i)
			s.enis[id].tags[f.Get(p+".Key")] = f.Get(p + ".Value")
		}
	}
	return "<CreateTagsResponse><requestId>r</requestId><return>true</return></CreateTagsResponse>", nil
}

// Log returns the API requests served so far, one line each: the action
// and its parameters in sorted order (metadata reads are not logged: their
// number depends on timing).
func (s *Server) Log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func logLine(f url.Values) string {
	keys := make([]string, 0, len(f))
	for k := range f {
		if k != "Action" && k != "Version" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	line := f.Get("Action")
	for _, k := range keys {
		line += " " + k + "=" + f.Get(k)
	}
	return line
}

// indexed returns the values of name.1, name.2, … .
func indexed(f url.Values, name string) []string {
	var out []string
	for i := 1; f.Has(name + "." + strconv.Itoa(i)); i++ {
		out = append(out, f.Get(name+"."+strconv.Itoa(i)))
	}
	return out
}

func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(e.status)
	fmt.Fprintf(w, "<Response><Errors><Error><Code>%s</Code><Message>%s</Message></Error></Errors><RequestID>r</RequestID></Response>", e.code, e.message)
}

// serveMetadata is IMDSv2 only: a token from PUT /latest/api/token, then
// GETs that carry it.
func (s *Server) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
		s.issueToken(w, r)
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.tokens[r.Header.Get("X-aws-ec2-metadata-token")] {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	mac, ok := strings.CutPrefix(r.URL.Path, "/latest/meta-data/network/interfaces/macs/")
	mac, ok2 := strings.CutSuffix(mac, "/local-ipv4s")
	if !ok || !ok2 {
		http.NotFound(w, r)
		return
	}
	for _, e := range s.enis {
		if strings.EqualFold(e.MAC, mac) {
			io.WriteString(w, strings.Join(e.visibleLocked(s.opt.Now().Add(-s.opt.Lag)), "\n"))
			return
		}
	}
	http.NotFound(w, r)
}

func (s *Server) issueToken(w http.ResponseWriter, r *http.Request) {
	ttl, err := strconv.Atoi(r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
	if err != nil || ttl < 1 || ttl > 21600 {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	s.mu.Lock()
	s.tokens[tok] = true
	s.mu.Unlock()
	w.Header().Set("X-aws-ec2-metadata-token-ttl-seconds", strconv.Itoa(ttl))
	io.WriteString(w, tok)
}

// visibleLocked is the address list metadata shows at instant t: the last
// change made at or before t. mu must be held.
func (e *eni) visibleLocked(t time.Time) []string {
	ips := e.meta[0].ips
	for _, c := range e.meta[1:] {
		if !c.at.After(t) {
			ips = c.ips
		}
	}
	return ips
}
