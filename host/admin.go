package host

import (
	"log/slog"

	"github.com/otopcua/otopcua/admin"
	"github.com/otopcua/otopcua/admin/auth"
	"github.com/otopcua/otopcua/config"
)

// newAdmin builds the admin pages and the JSON API (docs/admin.md) that
// routeTable mounts: users, sessions and API tokens from the Config DB's
// admin_users, the live state and the manual failover from b. The HTTP
// server's own bounds (Http:ReadTimeout, Http:WriteTimeout,
// Http:MaxBodyBytes, the header limits) already cut off a client that never
// finishes a request.
func newAdmin(b *adminBackend, users *auth.Service, h config.HttpConfig, logger *slog.Logger) *admin.Handler {
	a := admin.New(admin.Options{
		Backend: b, Auth: users, TLS: h.Tls.Enabled(), Loopback: h.Loopback(),
		Logger: logger.With("part", "admin"),
	})
	if !h.Tls.Enabled() && !h.Loopback() {
		logger.Warn("admin pages served without TLS on a non-loopback address: passwords travel in clear text; set Http:Tls:CertFile and Http:Tls:KeyFile",
			"addr", h.Addr())
	}
	return a
}
