package opcua

import (
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/deployment"
	"github.com/otopcua/otopcua/drivers"
)

func TestResolve(t *testing.T) {
	ns := []string{"http://opcfoundation.org/UA/", "urn:server", "urn:plc;x"}
	for _, tc := range []struct {
		nodeID string
		want   string
		status ua.StatusCode
	}{
		{"ns=3;s=Line1.Speed", "ns=3;s=Line1.Speed", ua.StatusOK},
		{"nsu=urn:plc;x;i=7", "ns=2;i=7", ua.StatusOK},
		{"i=2258", "i=2258", ua.StatusOK},
		{"nsu=urn:other;s=A", "", ua.StatusBadNodeIDUnknown},
		{"ns=1;q=1", "", ua.StatusBadNodeIDInvalid},
	} {
		n, p := resolve(deployment.Tag{Name: "T", NodeId: tc.nodeID}, ns)
		switch {
		case tc.status != ua.StatusOK && (p == nil || p.Status != tc.status || p.Tag != "T"):
			t.Errorf("%s: problem %+v, want status %v naming the tag", tc.nodeID, p, tc.status)
		case tc.status == ua.StatusOK && (p != nil || n.String() != tc.want):
			t.Errorf("%s: %v %+v, want %s", tc.nodeID, n, p, tc.want)
		}
	}
}

func TestTypeProblem(t *testing.T) {
	tag := deployment.Tag{Name: "Speed", NodeId: "ns=2;s=S", Type: deployment.TypeFloat32}
	dt := func(n uint32) *ua.DataValue {
		return &ua.DataValue{EncodingMask: ua.DataValueValue, Value: ua.MustVariant(ua.NewNumericNodeID(0, n))}
	}
	if p := typeProblem(tag, nil, dt(id.Float)); p != nil {
		t.Fatalf("Float for float32: %v", p)
	}
	p := typeProblem(tag, nil, dt(id.Double))
	if p == nil || p.Status != ua.StatusBadTypeMismatch || p.String() != "tag Speed (nodeId ns=2;s=S): the upstream's DataType is float64, the document says float32" {
		t.Fatalf("Double for float32: %v", p)
	}
	if p := typeProblem(tag, nil, &ua.DataValue{EncodingMask: ua.DataValueStatusCode, Status: ua.StatusBadNodeIDUnknown}); p == nil || p.Status != ua.StatusBadNodeIDUnknown {
		t.Fatalf("unknown node: %v", p)
	}
	if p := typeProblem(tag, nil, dt(id.String)); p == nil || p.Status != ua.StatusBadTypeMismatch {
		t.Fatalf("String for float32: %v", p)
	}
}

func TestValueOf(t *testing.T) {
	if v, err := valueOf(ua.MustVariant(int32(7)), deployment.TypeInt32); err != nil || v != int32(7) {
		t.Fatalf("int32: %v %v", v, err)
	}
	if _, err := valueOf(ua.MustVariant(int32(70000)), deployment.TypeInt16); err == nil {
		t.Fatal("70000 as int16 accepted")
	}
	if _, err := valueOf(nil, deployment.TypeBool); err == nil {
		t.Fatal("a missing value accepted")
	}
}

func TestNewRefusesAnotherDriver(t *testing.T) {
	if _, err := New(deployment.Device{Name: "d", Driver: deployment.DriverModbusTCP}, drivers.Options{}); err == nil {
		t.Fatal("a modbus-tcp device accepted")
	}
	d, err := New(deployment.Device{Name: "d", Driver: deployment.DriverOPCUA, Endpoint: "opc.tcp://127.0.0.1:1",
		Tags: []deployment.Tag{{Name: "a", NodeId: "i=1", Type: "bool", Writable: true}}}, drivers.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := d.Read(t.Context())
	if len(rs) != 1 || rs[0].Status != ua.StatusBadNoCommunication {
		t.Fatalf("before any connect: %+v", rs)
	}
	if err := d.Write(t.Context(), "a", true); drivers.StatusOf(err) != ua.StatusBadCommunicationError {
		t.Fatalf("write while not connected: %v", err)
	}
	_ = d.Close()
	if _, err := d.Read(t.Context()); err != drivers.ErrClosed {
		t.Fatalf("Read after Close: %v", err)
	}
}
