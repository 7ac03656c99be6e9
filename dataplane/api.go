package dataplane

import (
	"encoding/json"
	"net/http"
	"time"
)

// DeviceStatus is one device's line of GET /api/deployment.
type DeviceStatus struct {
	Name      string    `json:"name"`
	Driver    string    `json:"driver"`
	State     string    `json:"state"` // disconnected, connecting, connected, closed
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
	Tags      int       `json:"tags"`
}

// DeploymentReport is the body of GET /api/deployment.
type DeploymentReport struct {
	ClusterID string `json:"clusterId"`
	FollowStatus
	Devices []DeviceStatus `json:"devices"`
}

// DeploymentHandler serves GET /api/deployment: the applied version, where
// it came from (central or cache), when, why a newer one was refused, and
// per device its connection state. status and devices are called on the
// request's goroutine and must not block.
func DeploymentHandler(clusterID string, status func() FollowStatus, devices func() []DeviceStatus) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		rep := DeploymentReport{ClusterID: clusterID, FollowStatus: status(), Devices: devices()}
		if rep.Devices == nil {
			rep.Devices = []DeviceStatus{}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	})
}
