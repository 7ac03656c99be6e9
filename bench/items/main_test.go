package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseCases(t *testing.T) {
	cases := []struct {
		in   string
		want []Case
		err  string
	}{
		{"one:10000", []Case{{LayoutOne, 10000}}, ""},
		{" one:10_000 , spread:200000,", []Case{{LayoutOne, 10000}, {LayoutSpread, 200000}}, ""},
		{"", nil, "no case"},
		{"one", nil, "want layout:items"},
		{"many:10", nil, `layout "many"`},
		{"one:0", nil, "whole number"},
		{"one:x", nil, "whole number"},
		{"spread:20000000", nil, "whole number"},
	}
	for _, c := range cases {
		got, err := ParseCases(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseCases(%q) error = %v, want one containing %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.want) {
			t.Errorf("ParseCases(%q) = %v, %v; want %v", c.in, got, err, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("ParseCases(%q)[%d] = %v, want %v", c.in, i, got[i], c.want[i])
			}
		}
	}
	if (Case{LayoutOne, 7}).Variables() != 1 || (Case{LayoutSpread, 7}).Variables() != 7 {
		t.Error("Variables: one needs 1 variable, spread one per item")
	}
}

// TestRunCase runs both layouts at a small size against the real server
// and checks that every item is created and the subscription deleted.
func TestRunCase(t *testing.T) {
	for _, c := range []Case{{LayoutOne, 250}, {LayoutSpread, 250}} {
		r := RunCase(c, Params{Batch: 100, Sampling: 100 * time.Millisecond, Timeout: 30 * time.Second})
		if r.Error != "" || r.CreateTimeout || r.DeleteTimeout {
			t.Fatalf("%s: %+v", c, r)
		}
		if r.Created != c.Items || r.Refused != 0 {
			t.Fatalf("%s: created %d, refused %d (%s), want %d created", c, r.Created, r.Refused, r.FirstRefusal, c.Items)
		}
		if r.DeleteStatus != "Good" || r.ItemsPerS <= 0 || r.HeapAfterMiB <= 0 || r.LastBatchS <= 0 {
			t.Fatalf("%s: figures missing: %+v", c, r)
		}
	}
}

func TestTableMarksTimeouts(t *testing.T) {
	var b strings.Builder
	Table(&b, []Result{
		{Case: "one:200000", Items: 200000, Created: 70000, CreateS: 179.9, TimeoutS: 180, CreateTimeout: true, DeleteTimeout: true, FirstBatchS: 0.5, LastBatchS: 4.2},
		{Case: "one:100000", Items: 100000, Created: 100000, CreateS: 38.72, ItemsPerS: 2583, FirstBatchS: 0.267, LastBatchS: 6.281,
			DeleteTimeout: true, DeleteS: 60.6, HeapAfterMiB: 41, HeapPerItemB: 379},
		{Case: "spread:10", Items: 10, Created: 10, CreateS: 0.01, ItemsPerS: 1000, DeleteStatus: "Good", DeleteS: 0.001, HeapAfterMiB: 5, HeapPerItemB: 400},
	})
	out := b.String()
	for _, want := range []string{"| one:200000 | 70000 of 200000 | – | > 179.9 (timeout) | 0.500 / 4.200 | – (no time left) | – |",
		"| one:100000 | 100000 of 100000 | 2583 | 38.72 | 0.267 / 6.281 | > 60.6 (timeout) | 379 |",
		"| spread:10 | 10 of 10 | 1000 | 0.01 | – | 0.001 | 400 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestParseChildTakesTheLastJSONLine(t *testing.T) {
	a, _ := json.Marshal(Result{Case: "one:1", Created: 1})
	b, _ := json.Marshal(Result{Case: "one:2", Created: 2})
	r, err := parseChild(strings.NewReader("log line\n" + string(a) + "\n" + string(b) + "\n"))
	if err != nil || r.Case != "one:2" || r.Created != 2 {
		t.Fatalf("parseChild = %+v, %v", r, err)
	}
	if _, err := parseChild(strings.NewReader("nothing\n")); err == nil {
		t.Fatal("no JSON line must be an error")
	}
}
