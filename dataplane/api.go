package dataplane

import (
	"encoding/json"
	"net/http"
	"time"
)

// DeviceStatus is one device's line of GET /api/deployment.
type DeviceStatus struct {
	Name   string `json:"name"`
	Driver string `json:"driver"`
	// State is disconnected, connecting, connected, degraded (the device
	// takes connections but its reads all fail: drivers.Condition) or
	// closed.
	State string `json:"state"`
	// Since is when the connection entered its state (connected,
	// disconnected, …); for degraded see FailingSince.
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
	Tags      int       `json:"tags"`
	// ReadErrors counts the read requests that failed since the driver
	// started (otopcua_driver_reads_total{result="failed"}).
	ReadErrors uint64 `json:"readErrors"`
	// FailedPolls counts the polls in a row that read no value; 0 after
	// one that read a value. FailingSince is when the first of them began.
	FailedPolls  int       `json:"failedPolls"`
	FailingSince time.Time `json:"failingSince,omitzero"`
	// LastGoodRead is when the last poll that read a value began; absent
	// until one does.
	LastGoodRead time.Time `json:"lastGoodRead,omitzero"`
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
