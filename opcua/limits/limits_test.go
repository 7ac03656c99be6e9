package limits

import (
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDefaultsCoverEveryField: a limit added without a default would
// reach the server as 0 and refuse everything.
func TestDefaultsCoverEveryField(t *testing.T) {
	d := reflect.ValueOf(Defaults())
	for i := range d.NumField() {
		if d.Field(i).IsZero() {
			t.Errorf("Defaults().%s is zero", d.Type().Field(i).Name)
		}
	}
	if got := (Limits{}).WithDefaults(); got != Defaults() {
		t.Errorf("Limits{}.WithDefaults() = %+v, want Defaults() %+v", got, Defaults())
	}
}

// TestWithDefaultsKeepsGivenValues: each field given a value keeps it;
// a negative one takes the default.
func TestWithDefaultsKeepsGivenValues(t *testing.T) {
	typ := reflect.TypeFor[Limits]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		var given, negative Limits
		set := func(l *Limits, v int64) { reflect.ValueOf(l).Elem().Field(i).SetInt(v) }
		want := int64(7)
		if f.Type == reflect.TypeFor[time.Duration]() {
			want = int64(7 * time.Millisecond)
		}
		set(&given, want)
		set(&negative, -1)
		if got := reflect.ValueOf(given.WithDefaults()).Field(i).Int(); got != want {
			t.Errorf("%s %d became %d", f.Name, want, got)
		}
		def := reflect.ValueOf(Defaults()).Field(i).Int()
		if got := reflect.ValueOf(negative.WithDefaults()).Field(i).Int(); got != def {
			t.Errorf("%s -1 became %d, want the default %d", f.Name, got, def)
		}
	}
}

// TestIsALeaf: config imports this package, and config must not reach
// the OPC UA stack through it.
func TestIsALeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, ".") && p != "github.com/otopcua/otopcua/opcua/limits" {
			t.Errorf("limits depends on %s", p)
		}
	}
}
