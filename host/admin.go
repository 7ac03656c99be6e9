package host

import (
	"github.com/otopcua/otopcua/health"
)

// mountAdmin mounts the admin pages and the JSON API (package admin's HTTP
// side) on web, served from b. It mounts nothing yet: the pages are being
// written against admin.Backend.
func mountAdmin(web *health.HTTPServer, b *adminBackend) {
	_, _ = web, b
}
