package historian

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsMatch: the /api/historian example in docs/historian.md decodes
// into Status with no unknown field and a known state, and the page names
// every state and every metric.
func TestDocsMatch(t *testing.T) {
	text, err := os.ReadFile("../docs/historian.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(text, -1)
	if len(blocks) != 1 {
		t.Fatalf("docs/historian.md has %d JSON examples, want 1", len(blocks))
	}
	dec := json.NewDecoder(bytes.NewReader(blocks[0][1]))
	dec.DisallowUnknownFields()
	var st Status
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("the example does not decode into Status: %v", err)
	}
	doc := string(text)
	for _, s := range States {
		if !strings.Contains(doc, "| `"+s+"` |") {
			t.Errorf("docs/historian.md does not explain the state %s", s)
		}
	}
	if !strings.Contains(doc, "`"+st.State+"`") {
		t.Errorf("the example's state %q is not one of the documented", st.State)
	}
	for _, m := range []string{"otopcua_historian_queue_depth", "otopcua_historian_poisoned", "otopcua_historian_oldest_age_seconds",
		"otopcua_historian_drained_total", "otopcua_historian_refused_total", "otopcua_historian_drain_state{state}"} {
		if !strings.Contains(doc, "| `"+m+"` |") {
			t.Errorf("docs/historian.md does not list the metric %s", m)
		}
	}
}
