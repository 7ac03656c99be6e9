package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Request size limits. A client that sends more gets 413 before anything
// is parsed, so 100,000 oversized requests cost a bounded read each.
const (
	// maxLoginBody bounds POST /login (name, password, next).
	maxLoginBody = 4 << 10
	// maxLogoutBody bounds POST /logout (the CSRF token only).
	maxLogoutBody = 1 << 10
	// maxFailoverBody bounds POST /api/clusters/{id}/failover.
	maxFailoverBody = 1 << 10
	// maxClusterIDLen is the longest ClusterId the pages accept, in characters.
	maxClusterIDLen = 64
	// maxNameLen bounds a user name at login, in characters.
	maxNameLen = 64
	// maxPasswordLen bounds a password at login, in bytes.
	maxPasswordLen = 1024
	// maxNextLen bounds the page a login returns to.
	maxNextLen = 512
	// maxCredentialLen bounds a session cookie or bearer token before it
	// reaches the Authenticator.
	maxCredentialLen = 256
)

// errInvalid marks a request the client must correct (HTTP 400).
var errInvalid = errors.New("invalid request")

// loginForm is a decoded POST /login.
type loginForm struct {
	Name     string
	Password string
	// Next is the local page to return to after the login ("/" when none).
	Next string
}

// decodeLogin decodes the url-encoded body of POST /login: the fields
// name and password (both required, each given once) and an optional next
// (a local path). Any other field is refused.
func decodeLogin(body []byte) (loginForm, error) {
	vals, err := parseForm(body, "name", "password", "next")
	if err != nil {
		return loginForm{}, err
	}
	f := loginForm{Name: vals["name"], Password: vals["password"], Next: "/"}
	switch {
	case f.Name == "":
		return loginForm{}, fmt.Errorf("%w: the user name is empty", errInvalid)
	case !utf8.ValidString(f.Name) || utf8.RuneCountInString(f.Name) > maxNameLen || !printable(f.Name):
		return loginForm{}, fmt.Errorf("%w: the user name must be 1 to %d printable characters", errInvalid, maxNameLen)
	case f.Password == "":
		return loginForm{}, fmt.Errorf("%w: the password is empty", errInvalid)
	case len(f.Password) > maxPasswordLen:
		return loginForm{}, fmt.Errorf("%w: the password is longer than %d bytes", errInvalid, maxPasswordLen)
	}
	if n := vals["next"]; n != "" {
		if !localPath(n) {
			return loginForm{}, fmt.Errorf("%w: next must be a page of this server (a path starting with one /)", errInvalid)
		}
		f.Next = n
	}
	return f, nil
}

// decodeCSRFForm decodes the url-encoded body of POST /logout: only the
// field csrf, at most once.
func decodeCSRFForm(body []byte) (string, error) {
	vals, err := parseForm(body, "csrf")
	if err != nil {
		return "", err
	}
	return vals["csrf"], nil
}

// parseForm decodes an url-encoded body holding only the allowed fields,
// each at most once.
func parseForm(body []byte, allowed ...string) (map[string]string, error) {
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("%w: the form is not url-encoded: %v", errInvalid, err)
	}
	out := make(map[string]string, len(allowed))
	for k, vs := range q {
		if !contains(allowed, k) {
			return nil, fmt.Errorf("%w: unknown form field %.40q: accepted are %s", errInvalid, k, strings.Join(allowed, ", "))
		}
		if len(vs) != 1 {
			return nil, fmt.Errorf("%w: form field %s is given %d times", errInvalid, k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}

// failoverRequest is the optional JSON body of POST /api/clusters/{id}/failover.
type failoverRequest struct {
	// ExpectTarget, when set, is the node the operator confirmed (the
	// dialog names it). The failover is refused with 409 when the node it
	// would act on is another one by then: a stale page never restarts a
	// node nobody confirmed.
	ExpectTarget string `json:"expectTarget,omitempty"`
}

// decodeFailoverRequest decodes the body of POST
// /api/clusters/{id}/failover: empty, or one JSON object with the optional
// field expectTarget. Unknown fields and trailing data are refused.
func decodeFailoverRequest(body []byte) (failoverRequest, error) {
	var req failoverRequest
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return failoverRequest{}, fmt.Errorf("%w: the body must be empty or a JSON object with the optional field expectTarget: %v", errInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return failoverRequest{}, fmt.Errorf("%w: the body must hold one JSON object and nothing after it", errInvalid)
	}
	if len(req.ExpectTarget) > maxNextLen || !utf8.ValidString(req.ExpectTarget) || !printable(req.ExpectTarget) {
		return failoverRequest{}, fmt.Errorf("%w: expectTarget must be a NodeId (host:port)", errInvalid)
	}
	return req, nil
}

// parseClusterID checks the {id} path segment: 1 to 64 printable
// characters of valid UTF-8.
func parseClusterID(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("%w: the ClusterId is empty", errInvalid)
	}
	if len(s) > 4*maxClusterIDLen || !utf8.ValidString(s) || utf8.RuneCountInString(s) > maxClusterIDLen || !printable(s) {
		return "", fmt.Errorf("%w: a ClusterId is 1 to %d printable characters", errInvalid, maxClusterIDLen)
	}
	return s, nil
}

// printable reports whether s holds only printable characters (spaces
// allowed; no control or format characters). Callers check UTF-8 validity.
func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// localPath reports whether p is a path on this server that a redirect
// may go to: it starts with exactly one "/" and names no other host.
func localPath(p string) bool {
	if len(p) > maxNextLen || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\") || !utf8.ValidString(p) || !printable(p) {
		return false
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
