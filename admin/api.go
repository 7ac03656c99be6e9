package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// apiError is the body of every JSON API error.
type apiError struct {
	// Error is a short class: "not authenticated", "forbidden",
	// "bad request", "unknown cluster", "refused", "unavailable".
	Error string `json:"error"`
	// Reason says what happened in words.
	Reason string `json:"reason"`
}

func isAPI(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/api/") }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeAPIError(w http.ResponseWriter, status int, code, reason string) {
	writeJSON(w, status, apiError{Error: code, Reason: reason})
}

func errorCode(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return "bad request"
	case http.StatusUnauthorized:
		return "not authenticated"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "unknown cluster"
	case http.StatusConflict:
		return "refused"
	default:
		return "unavailable"
	}
}

// backendStatus maps a Backend error to its HTTP status and reason:
// unknown cluster 404, a refused failover 409 with its Reason, anything
// else 503.
func backendStatus(err error) (int, string) {
	var refused *RefusedError
	switch {
	case errors.Is(err, ErrUnknownCluster):
		return http.StatusNotFound, "no member of the mesh has this ClusterId"
	case errors.As(err, &refused):
		return http.StatusConflict, refused.Reason
	default:
		return http.StatusServiceUnavailable, err.Error()
	}
}

// clusterIDOf validates the {id} path segment, answering 400 itself.
func clusterIDOf(w http.ResponseWriter, r *http.Request) (string, bool) {
	id, err := parseClusterID(r.PathValue("id"))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "bad request", err.Error())
		return "", false
	}
	return id, true
}

func (h *Handler) apiClusters(w http.ResponseWriter, _ *http.Request, _ caller) {
	cs := h.backend.Clusters()
	if cs == nil {
		cs = []ClusterSummary{}
	}
	writeJSON(w, http.StatusOK, cs)
}

func (h *Handler) apiRedundancy(w http.ResponseWriter, r *http.Request, _ caller) {
	id, ok := clusterIDOf(w, r)
	if !ok {
		return
	}
	p, err := h.backend.Redundancy(id)
	if err != nil {
		status, reason := backendStatus(err)
		writeAPIError(w, status, errorCode(status), reason)
		return
	}
	if p.Members == nil {
		p.Members = []PanelMember{}
	}
	if p.Failovers == nil {
		p.Failovers = []FailoverRecord{}
	}
	writeJSON(w, http.StatusOK, p)
}

// apiFailover triggers a manual failover of the ClusterId's Primary. The
// role is re-checked here whatever the page showed; one request at a time
// reaches the Backend.
func (h *Handler) apiFailover(w http.ResponseWriter, r *http.Request, c caller) {
	id, ok := clusterIDOf(w, r)
	if !ok {
		return
	}
	if !c.User.Role.CanFailover() {
		h.log.Warn("admin: failover refused: role not allowed", "cluster", id, "user", c.User.Name, "role", c.User.Role)
		writeAPIError(w, http.StatusForbidden, "forbidden", "only an Administrator may trigger a failover (you are "+string(c.User.Role)+")")
		return
	}
	body, status, reason := readBody(w, r, maxFailoverBody, "application/json")
	if status != 0 {
		writeAPIError(w, status, errorCode(status), reason)
		return
	}
	req, err := decodeFailoverRequest(body)
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "bad request", err.Error())
		return
	}
	if !h.failoverMu.TryLock() {
		writeAPIError(w, http.StatusServiceUnavailable, "unavailable", "another failover request is being handled; try again when it has finished")
		return
	}
	defer h.failoverMu.Unlock()
	if req.ExpectTarget != "" {
		p, err := h.backend.Redundancy(id)
		if err != nil {
			status, reason := backendStatus(err)
			writeAPIError(w, status, errorCode(status), reason)
			return
		}
		if p.FailoverTarget != req.ExpectTarget {
			writeAPIError(w, http.StatusConflict, "refused", "the node a failover would act on is now "+quoteOrNone(p.FailoverTarget)+", not "+req.ExpectTarget+" as confirmed; reload and confirm again")
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), failoverTimeout)
	defer cancel()
	h.log.Info("admin: manual failover requested", "cluster", id, "user", c.User.Name)
	res, err := h.backend.Failover(ctx, id, c.User.Name)
	if err != nil {
		status, reason := backendStatus(err)
		h.log.Warn("admin: manual failover not done", "cluster", id, "user", c.User.Name, "status", status, "reason", reason)
		writeAPIError(w, status, errorCode(status), reason)
		return
	}
	h.log.Info("admin: manual failover sent", "cluster", id, "user", c.User.Name, "target", res.Target, "epoch", res.Epoch)
	writeJSON(w, http.StatusOK, res)
}

func quoteOrNone(s string) string {
	if s == "" {
		return "no node"
	}
	return s
}

// readBody reads at most limit bytes of the request body. A non-empty
// body must have the Content-Type wantType. It returns a non-zero status
// (413 too large, 415 wrong type, 400 unreadable) with the reason.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, wantType string) ([]byte, int, string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, http.StatusRequestEntityTooLarge, "the request body is larger than the accepted " + humanBytes(limit)
		}
		return nil, http.StatusBadRequest, "the request body could not be read"
	}
	if len(body) > 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != wantType {
			return nil, http.StatusUnsupportedMediaType, "the Content-Type must be " + wantType
		}
	}
	return body, 0, ""
}

func humanBytes(n int64) string {
	if n%1024 == 0 {
		return strconv.FormatInt(n/1024, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
