package flagval

import "testing"

func TestPair(t *testing.T) {
	if a, b, err := Pair("1000:1", ":", "tags", "devices", "tags:devices"); err != nil || a != 1000 || b != 1 {
		t.Fatalf("Pair = %d, %d, %v", a, b, err)
	}
	for in, want := range map[string]string{
		"1000":   "want tags:devices",
		"x:1":    `tags: strconv.Atoi: parsing "x": invalid syntax`,
		"10:y":   `devices: strconv.Atoi: parsing "y": invalid syntax`,
		" 10:1 ": `tags: strconv.Atoi: parsing " 10": invalid syntax`,
	} {
		if _, _, err := Pair(in, ":", "tags", "devices", "tags:devices"); err == nil || err.Error() != want {
			t.Errorf("Pair(%q): error %v, want %q", in, err, want)
		}
	}
}
