package aws

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/floating/floatingtest"
)

// TestPlans runs, against the fake, the plans the planner emits for AWS
// (testdata/*.txt, written by hand from the ops and params of
// floating/types.go) and prints the EC2 requests each one sends, its
// result, and who holds the address after it.
//
//	setup [holder=<eni>] [tag=<eni>:<epoch> ...]
//	apply node=<a|b> epoch=<n> verb=<verb>
//	<op> [target=<id>] [key=value ...]     one action per line
//	observe node=<a|b>
func TestPlans(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		var r *rig
		nodes := map[string]*Executor{}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "setup":
				r = newRig(t, 20*time.Millisecond)
				b, _ := r.executor(t, "b:4840", "eni-b", secret)
				nodes = map[string]*Executor{"a": r.exe, "b": b}
				setup(r, d)
				return "ok"
			case "apply":
				var node, verb string
				var epoch uint64
				d.ScanArgs(t, "node", &node)
				d.ScanArgs(t, "epoch", &epoch)
				d.ScanArgs(t, "verb", &verb)
				p := plan(floating.Verb(verb), epoch, floatingtest.ParseActions(t, d.Input, floatIP+"/32", epoch)...)
				before := len(r.fake.Log())
				err := nodes[node].Apply(context.Background(), p)
				return strings.Join(r.fake.Log()[before:], "\n") + "\n" + floatingtest.Result(err) + r.state()
			case "observe":
				var node string
				d.ScanArgs(t, "node", &node)
				o, err := nodes[node].Observe(context.Background())
				if err != nil {
					return "error: " + err.Error() + "\n"
				}
				return strings.TrimSpace(fmt.Sprintf("%s %s %s", o.Kind, o.ID, o.Member)) + "\n"
			}
			t.Fatalf("unknown command %s", d.Cmd)
			return ""
		})
	})
}

func setup(r *rig, d *datadriven.TestData) {
	for _, a := range d.CmdArgs {
		for _, v := range a.Vals {
			switch a.Key {
			case "holder":
				r.fake.Place(v, floatIP)
			case "tag":
				eni, epoch, _ := strings.Cut(v, ":")
				r.fake.SetTag(eni, EpochTag, epoch)
			}
		}
	}
}

func (r *rig) state() string {
	return fmt.Sprintf("holder: %q\ntags: eni-a=%q eni-b=%q\n", r.fake.Holder(floatIP), r.fake.Tag("eni-a", EpochTag), r.fake.Tag("eni-b", EpochTag))
}
