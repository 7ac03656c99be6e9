package fieldrig

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/opcua/uaclient"
	"github.com/otopcua/otopcua/tests/procs"
)

// ReadBatch is how many tags one Read or CreateMonitoredItems request asks
// for.
const ReadBatch = 1000

// Layout spreads the tags over the devices: tag k is register
// k % PerDevice of device k / PerDevice.
type Layout struct{ Devices, PerDevice int }

// Tags is the number of tags.
func (l Layout) Tags() int { return l.Devices * l.PerDevice }

// Of returns the device and register of tag k.
func (l Layout) Of(k int) (dev int, reg uint16) { return k / l.PerDevice, uint16(k % l.PerDevice) }

// Name is the browse path of tag k below the tag namespace ("dev03/r0042").
func (l Layout) Name(k int) string {
	d, r := l.Of(k)
	return DeviceName(d) + "/" + TagName(int(r))
}

// DeviceName is the name of device d in the deployment ("dev03").
func DeviceName(d int) string { return fmt.Sprintf("dev%02d", d) }

// TagName is the name of register r's tag in the deployment ("r0042").
func TagName(r int) string { return fmt.Sprintf("r%04d", r) }

// docDevice and docTag are the parts of a deployment document the
// harnesses write (docs/deployments.md).
type docDevice struct {
	Name         string   `json:"name"`
	Driver       string   `json:"driver"`
	Address      string   `json:"address"`
	UnitID       int      `json:"unitId"`
	PollInterval string   `json:"pollInterval"`
	Timeout      string   `json:"timeout"`
	Tags         []docTag `json:"tags"`
}

type docTag struct {
	Name     string `json:"name"`
	Table    string `json:"table"`
	Address  int    `json:"address"`
	Type     string `json:"type"`
	Writable bool   `json:"writable,omitempty"`
}

// Document is the deployment of l for clusterID: device d is the Modbus
// TCP device at addrs[d] (unit 1, timeout 1 s), polled every poll, with
// PerDevice int16 holding-register tags at addresses 0 … PerDevice−1
// (contiguous: 125 registers per read request). Tag writable is writable,
// every other tag read-only; a negative writable makes none writable.
func Document(clusterID string, l Layout, addrs []string, poll time.Duration, writable int) ([]byte, error) {
	if len(addrs) != l.Devices {
		return nil, fmt.Errorf("%d device addresses for %d devices", len(addrs), l.Devices)
	}
	devs := make([]docDevice, l.Devices)
	for d := range devs {
		tags := make([]docTag, l.PerDevice)
		for r := range tags {
			tags[r] = docTag{Name: TagName(r), Table: "holding", Address: r, Type: "int16",
				Writable: d*l.PerDevice+r == writable}
		}
		devs[d] = docDevice{Name: DeviceName(d), Driver: "modbus-tcp", Address: addrs[d], UnitID: 1,
			PollInterval: poll.String(), Timeout: "1s", Tags: tags}
	}
	return json.MarshalIndent(map[string]any{"clusterId": clusterID, "devices": devs}, "", " ")
}

// StartDevices starts n field devices on loopback ports that no other call
// of this process handed out; t's cleanup closes them. A device that does
// not start fails t.
func StartDevices(t testing.TB, n int) []*fielddevice.Device {
	t.Helper()
	var devs []*fielddevice.Device
	for range n {
		dev, err := fielddevice.Start(fmt.Sprintf("127.0.0.1:%d", procs.UniquePort(t)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dev.Close)
		devs = append(devs, dev)
	}
	return devs
}

// Addrs are the devices' addresses, in order.
func Addrs(devs []*fielddevice.Device) []string {
	out := make([]string, len(devs))
	for i, d := range devs {
		out[i] = d.Addr()
	}
	return out
}

// Tick calls step every `every` until ctx ends, the first time one
// interval after the start: the clock of a register changer.
func Tick(ctx context.Context, every time.Duration, step func()) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			step()
		}
	}
}

// Namespace reads the server's NamespaceArray through s and returns the
// index of clusterID's tag namespace (urn:otopcua:cluster:<clusterID>).
func Namespace(s *uaclient.Session, clusterID string) (uint16, error) {
	resp, err := s.Call(context.Background(), &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_NamespaceArray),
		AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}}}}, 10*time.Second)
	if err != nil {
		return 0, err
	}
	arr, _ := resp.(*ua.ReadResponse).Results[0].Value.Value().([]string)
	for i, u := range arr {
		if u == "urn:otopcua:cluster:"+clusterID {
			return uint16(i), nil
		}
	}
	return 0, fmt.Errorf("no tag namespace in %v", arr)
}

// NodeIDs are the NodeIds of every tag of l in namespace ns, by tag.
func NodeIDs(ns uint16, l Layout) []*ua.NodeID {
	out := make([]*ua.NodeID, l.Tags())
	for k := range out {
		out[k] = ua.NewStringNodeID(ns, l.Name(k))
	}
	return out
}

// AllGood reads the Value of every node through s, ReadBatch at a time,
// and returns nil when all read Good; otherwise an error that says how many
// do not and names the first of them with its status.
func AllGood(s *uaclient.Session, nodes []*ua.NodeID) error {
	bad, first := 0, ""
	for from := 0; from < len(nodes); from += ReadBatch {
		req := &ua.ReadRequest{TimestampsToReturn: ua.TimestampsToReturnNeither}
		for _, n := range nodes[from:min(from+ReadBatch, len(nodes))] {
			req.NodesToRead = append(req.NodesToRead, &ua.ReadValueID{NodeID: n, AttributeID: ua.AttributeIDValue, DataEncoding: &ua.QualifiedName{}})
		}
		resp, err := s.Call(context.Background(), req, 10*time.Second)
		if err != nil {
			return err
		}
		for i, dv := range resp.(*ua.ReadResponse).Results {
			if dv.Status != ua.StatusOK {
				if bad == 0 {
					first = fmt.Sprintf("%s %v", nodes[from+i], dv.Status)
				}
				bad++
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d tags not Good (first: %s)", bad, len(nodes), first)
	}
	return nil
}
