package deployment

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecode: any bytes give a valid document or a documented error, never
// a panic; every problem names a path and what is accepted; a document that
// decodes re-encodes (json.Marshal) to bytes that decode to an equal
// document.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(designExample))
	f.Add([]byte(doc(mb(holding("a", 0), `{"name": "b", "table": "holding", "address": 1, "type": "float64", "wordOrder": "little", "scale": 1e-3, "offset": -0}`))))
	f.Add([]byte(doc(sm(ramp("a"), `{"name": "c", "type": "uint16", "signal": "constant", "min": 42}`))))
	f.Add([]byte(`{"clusterId": "a", "devices": [{"name": "d", "driver": "modbus-tcp", "address": "[::1]:502", "unitId": 1e2, "pollInterval": "1.00:00:00", "tags": null}], "alarms": []}`))
	f.Add([]byte(`{"clusterId": "a", "clusterId": 1, "x": {"y": [null, true]}, "devices": [7, {"tags": {}}]}`))
	f.Add([]byte("\xef\xbb\xbf{\"clusterId\": \"\\u00e9\"}"))
	f.Add([]byte(`[[[[[[`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if (doc == nil) == (err == nil) {
			t.Fatalf("Decode returned doc %v and err %v", doc, err)
		}
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if p := doc.Validate(); p != nil {
			t.Fatalf("Validate of a decoded document: %v", p)
		}
		again, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		doc2, err := Decode(again)
		if err != nil {
			t.Fatalf("the re-encoded document does not decode: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(doc, doc2) {
			t.Fatalf("round trip changed the document:\n%#v\n%#v\n%s", doc, doc2, again)
		}
	})
}

func checkDecodeError(t *testing.T, err error) {
	var se *SyntaxError
	var ve *ValidationError
	switch {
	case errors.As(err, &se):
		if se.Line < 1 || se.Column < 1 || se.Msg == "" {
			t.Fatalf("SyntaxError without a position or message: %#v", se)
		}
	case errors.As(err, &ve):
		if len(ve.Problems) == 0 {
			t.Fatal("ValidationError without problems")
		}
		for _, p := range ve.Problems {
			if p.Path == "" || !strings.HasPrefix(p.Accepted, "accepted") && !strings.HasPrefix(p.Accepted, "unknown field") {
				t.Fatalf("problem without a path or an accepted text: %#v", p)
			}
		}
	case errors.Is(err, ErrTooLarge):
	default:
		t.Fatalf("undocumented error %T: %v", err, err)
	}
}

// FuzzParseBrowsePath: any text gives a path or an error, never a panic;
// a path's String() parses back to the same path.
func FuzzParseBrowsePath(f *testing.F) {
	for _, s := range []string{"/2:Line1/2:Speed", "/nsu=http://x/UA/;A.0:B", "/3:A&/B&&", "<Organizes>", "/2:", "/a:b", "/&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseBrowsePath(s)
		if err != nil {
			return
		}
		if len(p) == 0 || len(p) > MaxBrowsePathElements {
			t.Fatalf("%q: %d elements", s, len(p))
		}
		q, err := ParseBrowsePath(p.String())
		if err != nil || !reflect.DeepEqual(p, q) {
			t.Fatalf("%q → %+v → %q → %+v, %v", s, p, p.String(), q, err)
		}
	})
}
