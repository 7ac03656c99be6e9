package history_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/procs"
)

// startDevice starts a real Modbus TCP device on loopback for the test,
// its counter going up every FastCounterPeriod when counting, and returns
// it with its address.
func startDevice(t *testing.T, counting bool) (*fielddevice.Device, string) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	dev, err := fielddevice.Start(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	if counting {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go dev.RunCounter(ctx, fielddevice.PressFastCounter, fielddevice.FastCounterPeriod)
	}
	return dev, addr
}

// singleNode is the configuration of one node "h" of the test's ClusterId
// on a SQLite Config DB of its own, following deployments every 200 ms.
func singleNode(t *testing.T) map[string]any {
	t.Helper()
	cfg := procs.BaseConfig("h", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(t.TempDir(), "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	return cfg
}
