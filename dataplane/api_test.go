package dataplane

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDeploymentHandler(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	h := DeploymentHandler("site-a",
		func() FollowStatus { return FollowStatus{Version: 3, Source: SourceCache, AppliedAt: at} },
		func() []DeviceStatus {
			return []DeviceStatus{{Name: "press1", Driver: "modbus-tcp", State: "connected", Since: at, Tags: 5}}
		})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/deployment", nil))
	var got DeploymentReport
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	if got.ClusterID != "site-a" || got.Version != 3 || got.Source != "cache" || !got.AppliedAt.Equal(at) ||
		len(got.Devices) != 1 || got.Devices[0].State != "connected" {
		t.Fatalf("%+v", got)
	}
	if rec.Header().Get("Content-Type") != "application/json" {
		t.Fatal(rec.Header())
	}
}
