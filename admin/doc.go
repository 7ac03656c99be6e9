// Package admin serves otopcua's admin pages and JSON API on Http:Port:
// the overview of every ClusterId in the mesh, the Live redundancy panel
// with the Administrator-only Trigger failover, the audit log, login and
// logout. It depends on the running node only through Backend and on the
// user store only through Authenticator.
//
// Files: handler.go (Options, New, Mount, security headers), session.go
// (cookie and bearer authentication, CSRF), pages.go (server-rendered
// pages), api.go (JSON API), decode.go (request decoders, pure and
// fuzzed), templates/ and static/ (embedded; no front-end build step).
// admintest holds in-memory Backend and Authenticator for tests.
//
// Invariants:
//   - Every page but /login needs a live session (else 303 to /login); the
//     API needs a session cookie or Authorization: Bearer (else 401).
//     Handler.Reader puts the host's read reports under the API's rule,
//     for any role Viewer and above (Role.CanRead).
//   - A state-changing request passes http.CrossOriginProtection and, when
//     it is authenticated by the cookie, carries the session's CSRF token
//     (form field csrf or header X-CSRF-Token). Bearer requests carry no
//     cookie and need no token.
//   - The role is checked on the server for every failover (Role.CanFailover)
//     and every audit read (Role.CanReadAudit), whatever the page showed.
//   - At most one failover request is inside Backend.Failover at a time;
//     the others are answered 503 at once.
//   - Every request body is bounded (4 KiB login, 1 KiB otherwise) and every
//     Backend call has a deadline; all output goes through html/template or
//     encoding/json, and no page has inline script (the CSP forbids it).
//
// Duties of the caller (the host):
//  1. Build the Handler with New and Mount it on the ServeMux of Http:Port.
//  2. Bound the http.Server so a client that never finishes a request is
//     cut off (header, read and write timeouts): otopcua's health.HTTPServer
//     does; a server of another program calls ConfigureServer.
//  3. Set Options.TLS when serving HTTPS and Options.Loopback when
//     Http:Hostname is a loopback address; otherwise the pages warn that
//     passwords travel in clear text.
//  4. Make Backend.Redundancy and Backend.Clusters cheap: every open panel
//     calls Redundancy once a second.
package admin
