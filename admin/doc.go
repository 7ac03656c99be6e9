// Package admin serves otopcua's admin pages and JSON API on Http:Port:
// the overview of every ClusterId in the mesh, the Live redundancy panel
// with the Administrator-only Trigger failover, the audit log, login and
// logout. It depends on the running node only through Backend and on the
// user store only through Authenticator.
package admin
