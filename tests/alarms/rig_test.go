// Package alarms_test runs scripted alarms on real processes: two `otopcua
// host` nodes of one ClusterId, a real Modbus TCP device whose register
// the test moves, PostgreSQL as the Config DB (alarm_history), node-opcua
// and HTTP clients on both nodes.
package alarms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/pg"
	"github.com/otopcua/otopcua/tests/procs"
)

const (
	clusterID = "site-a"
	alarmName = "HighLevel"
	high, low = 80, 0
)

// document is the deployment: one holding register read every 50 ms and
// one alarm over it.
func document(dev string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [{
    "name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1,
    "pollInterval": "50ms", "timeout": "1s",
    "tags": [{"name": "Level", "table": "holding", "address": 0, "type": "int16"}]
  }],
  "alarms": [{"name": %q, "source": "press1/Level", "condition": "press1.Level > 50",
              "severity": 700, "message": "Level above 50"}]
}`, clusterID, dev, alarmName)
}

type rig struct {
	t    *testing.T
	dir  string
	db   *pg.Server
	dev  *fielddevice.Device
	a, b *procs.Node // a is the first seed: the Primary
	cfgs map[string]map[string]any
}

func startRig(t *testing.T) *rig { return startRigWith(t, false) }

// startRigWith starts the rig; replicate turns LocalDb pair replication on.
func startRigWith(t *testing.T, replicate bool) *rig { return startRigEdit(t, replicate, nil) }

// startRigEdit is startRigWith with edit applied to each node's
// configuration before it starts.
func startRigEdit(t *testing.T, replicate bool, edit func(cfg map[string]any)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), cfgs: map[string]map[string]any{}}
	r.db = pg.Start(t)
	devAddr := fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t))
	dev, err := fielddevice.Start(devAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dev.Close)
	r.dev = dev
	dev.SetHolding(0, low)
	ports := map[string]procs.Ports{"a": procs.NewPorts(t), "b": procs.NewPorts(t)}
	syncPorts := map[string]int{"a": procs.UniquePort(t), "b": procs.UniquePort(t)}
	seeds := []string{fmt.Sprintf("127.0.0.1:%d", ports["a"].Cluster), fmt.Sprintf("127.0.0.1:%d", ports["b"].Cluster)}
	for _, name := range []string{"a", "b"} {
		cfg := procs.BaseConfig(name, ports[name])
		other := map[string]string{"a": "b", "b": "a"}[name]
		cfg["Cluster"].(map[string]any)["SeedNodes"] = seeds
		cfg["Node"].(map[string]any)["ClusterId"] = clusterID
		cfg["OpcUa"].(map[string]any)["PeerApplicationUris"] = []string{"urn:" + other + ":otopcua"}
		cfg["ConfigDb"] = map[string]any{"Provider": "postgres", "ConnectionString": r.db.DSN()}
		localDb := map[string]any{"Path": filepath.Join(r.dir, name+"-local.db")}
		if replicate {
			localDb["SyncListenPort"] = syncPorts[name]
			localDb["Peers"] = []string{fmt.Sprintf("127.0.0.1:%d", syncPorts[other])}
			localDb["Replication"] = map[string]any{"ApiKey": "the-pair's-shared-key"}
		}
		cfg["LocalDb"] = localDb
		cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
		cfg["Telemetry"].(map[string]any)["LogLevel"] = "info"
		if edit != nil {
			edit(cfg)
		}
		r.cfgs[name] = cfg
	}
	r.a = procs.Start(t, "a", r.cfgs["a"])
	r.a.WaitFullyReady(60 * time.Second)
	r.b = procs.Start(t, "b", r.cfgs["b"])
	r.b.WaitFullyReady(60 * time.Second)
	procs.Deploy(t, r.cfgs["a"], document(devAddr))
	for _, n := range []*procs.Node{r.a, r.b} {
		procs.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
			if _, err := alertsOf(n); err != nil {
				return err
			}
			v, err := deployedVersion(n)
			if err != nil {
				return err
			}
			if v == 0 {
				return fmt.Errorf("%s: the deployment is not applied yet", n.Name)
			}
			return nil
		})
	}
	// a is Primary, b Secondary.
	r.waitRole(r.a, "primary")
	r.waitRole(r.b, "secondary")
	return r
}

func (r *rig) waitRole(n *procs.Node, role string) {
	r.t.Helper()
	series := fmt.Sprintf(`otopcua_redundancy_role{cluster_id=%q,role=%q} 1`, clusterID, role)
	procs.CheckFor(r.t, 30*time.Second, 100*time.Millisecond, func() error {
		body, err := n.Get("/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(body, series) {
			return fmt.Errorf("%s is not %s yet", n.Name, role)
		}
		return nil
	})
}

type alert struct {
	Alarm     string `json:"alarm"`
	Active    bool   `json:"active"`
	Acked     bool   `json:"acked"`
	Confirmed bool   `json:"confirmed"`
	Quality   string `json:"quality"`
}

// alertsOf is GET /alerts of a node.
func alertsOf(n *procs.Node) ([]alert, error) {
	body, err := n.Get("/alerts")
	if err != nil {
		return nil, err
	}
	var v struct {
		Alerts []alert `json:"alerts"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return nil, fmt.Errorf("%s /alerts: %v: %s", n.Name, err, body)
	}
	return v.Alerts, nil
}

// deployedVersion is the version of the deployment the node applied (0
// before the first).
func deployedVersion(n *procs.Node) (int, error) {
	body, err := n.Get("/api/deployment")
	if err != nil {
		return 0, err
	}
	var d struct {
		Version int `json:"version"`
	}
	_ = json.Unmarshal([]byte(body), &d)
	return d.Version, nil
}

// historyRow is one alarm_history row.
type historyRow struct {
	TransitionID, Kind string
	Time               time.Time
	Active, Acked      bool
}

// history reads alarm_history of the alarm, oldest first.
func (r *rig) history() ([]historyRow, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.db.DSN())
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT transition_id, kind, event_time, active, acked FROM alarm_history
		WHERE cluster_id = $1 AND alarm = $2 ORDER BY event_time, id`, clusterID, alarmName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []historyRow
	for rows.Next() {
		var h historyRow
		if err := rows.Scan(&h.TransitionID, &h.Kind, &h.Time, &h.Active, &h.Acked); err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, rows.Err()
}

// queueDepth is a node's /api/historian queue depth and state.
func queueDepth(n *procs.Node) (int, string, error) {
	body, err := n.Get("/api/historian")
	if err != nil {
		return 0, "", err
	}
	var s struct {
		State      string `json:"state"`
		QueueDepth int    `json:"queueDepth"`
	}
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		return 0, "", err
	}
	return s.QueueDepth, s.State, nil
}
