package deployment

import (
	"errors"
	"testing"
)

const typelessDoc = `{"clusterId": "site-a", "devices": [
  {"name": "up", "driver": "opcua", "endpoint": "opc.tcp://a:4840", "tags": [
    {"name": "Speed", "nodeId": "ns=2;s=Speed"},
    {"name": "Run", "browsePath": "/2:Line1/2:Run", "type": null},
    {"name": "Count", "nodeId": "ns=2;s=Count", "type": "int32"}]},
  {"name": "sim", "driver": "simulated", "tags": [
    {"name": "C", "type": "int16", "signal": "constant", "min": 1}]}]}`

// TestDecodeTypeless: an opcua tag without type is accepted only by
// DecodeTypeless; WithTypes writes the types in, keeping every other
// byte, and the result passes Decode.
func TestDecodeTypeless(t *testing.T) {
	var ve *ValidationError
	if _, err := Decode([]byte(typelessDoc)); !errors.As(err, &ve) || len(ve.Problems) != 2 ||
		ve.Problems[0].Path != "devices[0].tags[0].type" || ve.Problems[1].Path != "devices[0].tags[1].type" {
		t.Fatalf("Decode of type-less opcua tags: %v", err)
	}
	doc, err := DecodeTypeless([]byte(typelessDoc))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Devices[0].Tags[0].Type != "" || doc.Devices[0].Tags[2].Type != TypeInt32 {
		t.Fatalf("types %q %q", doc.Devices[0].Tags[0].Type, doc.Devices[0].Tags[2].Type)
	}
	// A simulated tag still needs its type.
	noSimType := `{"clusterId": "site-a", "devices": [{"name": "sim", "driver": "simulated", "tags": [{"name": "C", "signal": "constant", "min": 1}]}]}`
	if _, err := DecodeTypeless([]byte(noSimType)); !errors.As(err, &ve) || ve.Problems[0].Path != "devices[0].tags[0].type" {
		t.Fatalf("a simulated tag without type: %v", err)
	}

	filled, err := WithTypes(append(bom, typelessDoc...), map[TagAt]string{{0, 0}: TypeFloat64, {0, 1}: TypeBool})
	if err != nil {
		t.Fatal(err)
	}
	want := string(bom) + `{"clusterId": "site-a", "devices": [
  {"name": "up", "driver": "opcua", "endpoint": "opc.tcp://a:4840", "tags": [
    {"type": "float64", "name": "Speed", "nodeId": "ns=2;s=Speed"},
    {"name": "Run", "browsePath": "/2:Line1/2:Run", "type": "bool"},
    {"name": "Count", "nodeId": "ns=2;s=Count", "type": "int32"}]},
  {"name": "sim", "driver": "simulated", "tags": [
    {"name": "C", "type": "int16", "signal": "constant", "min": 1}]}]}`
	if string(filled) != want {
		t.Fatalf("WithTypes:\n%s\nwant\n%s", filled, want)
	}
	if _, err := Decode(filled); err != nil {
		t.Fatalf("the filled document: %v", err)
	}

	for name, types := range map[string]map[TagAt]string{
		"a given type":   {{0, 2}: TypeInt16},
		"no such tag":    {{0, 3}: TypeBool},
		"no such device": {{5, 0}: TypeBool},
		"unknown type":   {{0, 0}: "string"},
	} {
		if _, err := WithTypes([]byte(typelessDoc), types); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
