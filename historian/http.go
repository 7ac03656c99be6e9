package historian

import (
	"encoding/json"
	"net/http"
)

// APIPath is where the host mounts Handler.
const APIPath = "/api/historian"

// Handler serves GET (and HEAD) APIPath: Status as JSON. It never touches
// a database, so it answers during any outage; other methods get 405.
func (h *Historian) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(h.Status())
	})
}
