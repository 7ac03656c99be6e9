package demo

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/configdb"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
)

// The demo's field devices: a Modbus TCP device the demo runs itself
// (press1) and a simulated one (sim), deployed to the pair's Config DB
// before the nodes start.
const (
	demoSetpoint = "press1/Setpoint"
	demoSpeed    = "press1/Speed"
	demoRamp     = "sim/Ramp"
)

// deploymentDoc is the demo's deployment for a Modbus device at addr.
func deploymentDoc(addr string) string {
	return fmt.Sprintf(`{
  "clusterId": %q,
  "devices": [
    {"name": "press1", "driver": "modbus-tcp", "address": %q, "unitId": 1, "pollInterval": "00:00:00.250", "timeout": "1s",
     "tags": [
       {"name": "Setpoint", "table": "holding", "address": 0, "type": "int16", "writable": true},
       {"name": "Speed", "table": "holding", "address": 10, "type": "float32"}
     ]},
    {"name": "sim", "driver": "simulated", "pollInterval": "00:00:00.500",
     "tags": [
       {"name": "Ramp", "type": "float64", "signal": "ramp", "period": "20s", "min": 0, "max": 100},
       {"name": "Sine", "type": "float64", "signal": "sine", "period": "10s", "min": -1, "max": 1}
     ]}
  ]
}`, ClusterID, addr)
}

// startDevices starts the Modbus device on a free loopback port, makes its
// Speed register move, and stores the deployment in the Config DB at dir.
// The returned stop ends the device.
func startDevices(ctx context.Context, dir string) (addr string, stop func(), err error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	addr = l.Addr().String()
	_ = l.Close()
	dev, err := fielddevice.Start(addr)
	if err != nil {
		return "", nil, err
	}
	dev.SetHolding(0, 50)
	moveCtx, cancel := context.WithCancel(ctx)
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for x := 0.0; ; x += 0.5 {
			select {
			case <-moveCtx.Done():
				return
			case <-t.C:
				bits := math.Float32bits(float32(1450 + 50*math.Sin(x/5)))
				dev.SetHolding(10, uint16(bits>>16), uint16(bits))
			}
		}
	}()
	stop = func() { cancel(); dev.Close() }
	dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
	defer dcancel()
	db, err := configdb.Open(dctx, "sqlite", ConfigDBConnectionString(dir))
	if err != nil {
		stop()
		return "", nil, err
	}
	defer db.Close()
	if err := db.Migrate(dctx); err != nil {
		stop()
		return "", nil, err
	}
	if _, _, err := db.PutDeployment(dctx, ClusterID, []byte(deploymentDoc(addr))); err != nil {
		stop()
		return "", nil, err
	}
	return addr, stop, nil
}

// tryWrite writes v to the demo's Setpoint through the node at endpoint
// and reads it back after a moment: what an operator's HMI would see.
func tryWrite(ctx context.Context, endpoint string, v int16) (status ua.StatusCode, after any, err error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ch, err := uaclient.Dial(ctx, endpoint, uaclient.Options{})
	if err != nil {
		return 0, nil, err
	}
	defer ch.Close()
	s, err := uaclient.NewSession(ctx, ch, "otopcua demo", time.Minute, 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	defer s.Close(ctx, time.Second)
	node := ua.NewStringNodeID(2, demoSetpoint)
	resp, err := ch.Call(ctx, &ua.WriteRequest{NodesToWrite: []*ua.WriteValue{{NodeID: node, AttributeID: ua.AttributeIDValue,
		Value: &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(v)}}}}, s.Auth(), 5*time.Second)
	if err != nil {
		return 0, nil, err
	}
	status = resp.(*ua.WriteResponse).Results[0]
	time.Sleep(time.Second) // the revert of a denied write, or the next poll
	rr, err := ch.Call(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: node, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}, s.Auth(), 5*time.Second)
	if err != nil {
		return status, nil, err
	}
	return status, rr.(*ua.ReadResponse).Results[0].Value.Value(), nil
}

// demoWrites, once the pair is healthy, shows what a client that writes
// through the Secondary gets in the reference's default write mode and in
// forward mode: the Setpoint written through the Secondary in optimistic
// mode (Good at once, then reverted: the Primary gate denies it); the
// Secondary switched to OpcUa:WriteMode forward (its configuration
// rewritten, the node restarted at the same address); the Setpoint written
// through it again (forwarded to the Primary, it lands); and through the
// Primary (it lands). Each is an event line; the kill of
// --kill-primary-after waits for them.
func (r *runner) demoWrites(ctx context.Context) {
	defer r.send(func(time.Time) []string { r.writesDone = true; return nil })
	primary, secondary, ok := r.waitHealthy(ctx, "", 0)
	if !ok {
		return
	}
	r.writeThrough(ctx, secondary, 7, "the Secondary, in optimistic mode")

	i := slices.IndexFunc(r.nodes, func(n Node) bool { return n.Name == secondary })
	cfg := NodeConfig(r.dir, r.nodes, i)
	cfg["OpcUa"].(map[string]any)["WriteMode"] = "forward"
	b, err := marshalConfig(cfg)
	if err == nil {
		err = os.WriteFile(r.nodes[i].ConfigPath, b, 0o644)
	}
	if err != nil {
		r.send(func(time.Time) []string {
			return []string{"switching " + secondary + " to forward mode failed: " + err.Error()}
		})
		return
	}
	r.send(func(time.Time) []string {
		return []string{fmt.Sprintf("switching %s to OpcUa:WriteMode forward: its configuration is rewritten and it is restarted at the same address (SIGTERM)", secondary)}
	})
	oldPID, err := r.kids[secondary].signal(sigTerm)
	if err != nil {
		r.send(func(time.Time) []string { return []string{"restarting " + secondary + " failed: " + err.Error()} })
		return
	}
	primary, secondary, ok = r.waitHealthy(ctx, secondary, oldPID)
	if !ok {
		return
	}
	r.writeThrough(ctx, secondary, 8, "the Secondary, in forward mode")
	r.writeThrough(ctx, primary, 60, "the Primary")
}

// waitHealthy waits until one node reads 250 and another 240 and, when
// restarted is set, that node runs a process other than oldPID and is Up
// in its own view; it returns the Primary and the Secondary.
func (r *runner) waitHealthy(ctx context.Context, restarted string, oldPID int) (primary, secondary string, ok bool) {
	for ctx.Err() == nil {
		done := make(chan struct{})
		r.send(func(time.Time) []string {
			defer close(done)
			if r.model.primary == "" || !r.model.healthySecondary() {
				return nil
			}
			if restarted != "" {
				if n := r.model.node(restarted); n == nil || n.pid == 0 || n.pid == oldPID || n.member != "Up" {
					return nil
				}
			}
			primary = r.model.primary
			for _, n := range r.nodes {
				if n.Name != primary {
					secondary = n.Name
				}
			}
			return nil
		})
		select {
		case <-done:
		case <-ctx.Done():
			return "", "", false
		}
		if primary != "" {
			return primary, secondary, true
		}
		select {
		case <-time.After(500 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return "", "", false
}

// writeThrough writes v to the Setpoint through node and reports what the
// client saw and what the device holds as an event line.
func (r *runner) writeThrough(ctx context.Context, node string, v int16, what string) {
	ep := ""
	for _, n := range r.nodes {
		if n.Name == node {
			ep = n.Endpoint()
		}
	}
	st, after, err := tryWrite(ctx, ep, v)
	line := fmt.Sprintf("write %s = %d through %s (%s): ", demoSetpoint, v, node, what)
	switch {
	case err != nil:
		line += "failed: " + err.Error()
	case after == v && strings.Contains(what, "forward"):
		line += fmt.Sprintf("answered %s, forwarded to the Primary, landed on the device once (the tag reads %v)", shortStatus(st), after)
	case after == v:
		line += fmt.Sprintf("answered %s, landed on the device (the tag reads %v)", shortStatus(st), after)
	default:
		line += fmt.Sprintf("answered %s, then reverted to %v: the Primary gate denied it (not primary), the device was not written", shortStatus(st), after)
	}
	r.send(func(time.Time) []string { return []string{line} })
}

func shortStatus(st ua.StatusCode) string {
	if st == ua.StatusOK {
		return "Good"
	}
	return "0x" + strconv.FormatUint(uint64(st), 16)
}
