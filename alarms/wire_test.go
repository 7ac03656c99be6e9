package alarms

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"
)

var sampleTransition = Transition{
	ClusterID: "site-a", Alarm: "HighTemperature", TransitionID: "00000000000004d2/HighTemperature/17", Kind: KindActive,
	Time: time.Date(2026, 12, 1, 10, 32, 6, 630000000, time.UTC), Severity: 700, Message: "Temperature above 80 °C",
	Source: "press1/Temperature", Value: "press1.Temperature=81.5", Active: true, Enabled: true,
	Publisher: "10.20.0.11:4053", Epoch: 3,
}

// The wire form is part of the contract with other versions of otopcua
// and with the historian: field names and encodings are fixed here.
func TestTransitionWireForm(t *testing.T) {
	const want = `{"clusterId":"site-a","alarm":"HighTemperature","transitionId":"00000000000004d2/HighTemperature/17",` +
		`"kind":"active","time":"2026-12-01T10:32:06.63Z","severity":700,"message":"Temperature above 80 °C",` +
		`"source":"press1/Temperature","value":"press1.Temperature=81.5","active":true,"acked":false,"confirmed":false,` +
		`"enabled":true,"publisher":"10.20.0.11:4053","epoch":3}`
	msg := sampleTransition.Encode()
	if got := string(msg.GetValue()); got != want {
		t.Fatalf("wire form\n got %s\nwant %s", got, want)
	}
	back, err := DecodeTransition(msg)
	if err != nil || !reflect.DeepEqual(back, sampleTransition) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	// A newer node's extra field is ignored.
	extra := wrapperspb.Bytes([]byte(want[:len(want)-1] + `,"shelved":true}`))
	if _, err := DecodeTransition(extra); err != nil {
		t.Fatalf("an unknown field: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for name, data := range map[string]string{
		"not JSON":        `{`,
		"two values":      `{"clusterId":"a"} {}`,
		"no cluster":      `{"alarm":"x","transitionId":"1","kind":"active","time":"2026-01-01T00:00:00Z"}`,
		"unknown kind":    `{"clusterId":"a","alarm":"x","transitionId":"1","kind":"quality","time":"2026-01-01T00:00:00Z"}`,
		"no time":         `{"clusterId":"a","alarm":"x","transitionId":"1","kind":"active"}`,
		"severity 1001":   `{"clusterId":"a","alarm":"x","transitionId":"1","kind":"active","time":"2026-01-01T00:00:00Z","severity":1001}`,
		"wrong JSON type": `{"clusterId":1}`,
	} {
		if _, err := DecodeTransition(wrapperspb.Bytes([]byte(data))); !errors.Is(err, ErrWire) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := DecodeTransition(wrapperspb.String("x")); !errors.Is(err, ErrWire) {
		t.Errorf("a StringValue: %v", err)
	}
	if _, err := DecodeSnapshot(wrapperspb.Bytes([]byte(`{"clusterId":"a","incarnation":"1","alarms":[{"active":true}]}`))); !errors.Is(err, ErrWire) {
		t.Errorf("a snapshot entry without a name: %v", err)
	}
	s := StateSnapshot{ClusterID: "a", Incarnation: "00000000000004d2", Alarms: []AlarmState{{Alarm: "x", Active: true, Acked: true, Enabled: true, Comment: "c"}}}
	if back, err := DecodeSnapshot(s.Encode()); err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("snapshot round trip: %+v, %v", back, err)
	}
}

// FuzzDecodeTransition: any bytes decode or give ErrWire, never a panic;
// what decodes re-encodes to an equal transition.
func FuzzDecodeTransition(f *testing.F) {
	f.Add(sampleTransition.Encode().GetValue())
	f.Add([]byte(`{"clusterId":"a","alarm":"x","transitionId":"1","kind":"acked","time":"2026-01-01T00:00:00+01:00","comment":"\u00e9"}`))
	f.Add([]byte(`{"clusterId":"a","alarms":[{"alarm":"x"}],"incarnation":"1"}`))
	f.Add([]byte(`[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		msg := wrapperspb.Bytes(data)
		if tr, err := DecodeTransition(msg); err == nil {
			again, err := DecodeTransition(tr.Encode())
			if err != nil || !again.Time.Equal(tr.Time) {
				t.Fatalf("re-encoded transition: %v", err)
			}
			again.Time, tr.Time = time.Time{}, time.Time{}
			if !reflect.DeepEqual(again, tr) {
				t.Fatalf("round trip changed it: %+v %+v", tr, again)
			}
		} else if !errors.Is(err, ErrWire) {
			t.Fatalf("undocumented error %v", err)
		}
		if _, err := DecodeSnapshot(msg); err != nil && !errors.Is(err, ErrWire) {
			t.Fatalf("undocumented error %v", err)
		}
	})
}
