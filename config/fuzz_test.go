package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadJSON checks that any file contents give either a valid Config or
// an error, never a panic, and that errors are of the documented kinds.
func FuzzLoadJSON(f *testing.F) {
	f.Add([]byte(pairNodeA))
	f.Add([]byte(`{"Cluster": {"SeedNodes": {"0": "a:1", "x": 2}}, "opcua:port": "4841"}`))
	f.Add([]byte(`{"Cluster": {"SelfFormAfter": null, "Roles": "admin,driver"}} // c`))
	f.Add([]byte(`{"a": [1, {"B": [null]}], "Cluster": {"Port": 1e300}}`))
	f.Add([]byte("/*"))
	if matches, _ := filepath.Glob("../examples/*/*.json"); len(matches) > 0 {
		for _, m := range matches {
			if b, err := os.ReadFile(m); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := LoadBytes("fuzz.json", data, []string{"OTOPCUA_CLUSTER__SEEDNODES__1=b:4053"})
		if (cfg == nil) == (err == nil) {
			t.Fatalf("LoadBytes returned cfg=%v err=%v", cfg, err)
		}
		if err != nil {
			var se *SyntaxError
			var ve *ValidationError
			if !errors.As(err, &se) && !errors.As(err, &ve) {
				t.Fatalf("unexpected error kind %T: %v", err, err)
			}
			if ve != nil && len(ve.Items) == 0 {
				t.Fatal("ValidationError without items")
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("loaded config does not validate: %v", err)
		}
	})
}
