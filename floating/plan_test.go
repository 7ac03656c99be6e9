package floating

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The golden files are rewritten with -rewrite. The flag may already be
// registered by another test file of the package (datadriven registers
// one of that name); then that one is read.
func init() {
	if flag.Lookup("rewrite") == nil {
		flag.Bool("rewrite", false, "rewrite the golden files under testdata/ instead of comparing")
	}
}

func rewriting() bool {
	f := flag.Lookup("rewrite")
	return f != nil && f.Value.String() == "true"
}

// planTargets are the targets of the golden plans: node a of a pair.
var planTargets = []Target{
	{Provider: ProviderLinux, Interface: "eth0", AnnounceCount: 3, AnnounceInterval: 200 * time.Millisecond},
	{Provider: ProviderAWS, NetworkInterfaceID: "eni-0a1b2c3d4e5f60718", ConfirmTimeout: 10 * time.Second},
	{Provider: ProviderOCI, VnicID: "ocid1.vnic.oc1.eu-frankfurt-1.aaaa"},
	{Provider: ProviderAzure, NIC: "/subscriptions/0000/resourceGroups/plant/providers/Microsoft.Network/networkInterfaces/node-a-nic", IPConfiguration: "floating"},
}

var planVerbs = []Verb{VerbSeize, VerbReassign, VerbRelease}

// intentFor is the intent of node a for verb under epoch 7.
func intentFor(verb Verb, addr string) Intent {
	in := Intent{ClusterID: "line-1", Address: netip.MustParsePrefix(addr), Self: "node-a:4053", Owner: "node-a:4053", Verb: verb, Epoch: 7}
	switch verb {
	case VerbSeize:
		in.Reason = "node-a:4053 is Primary and eligible; nobody holds the address"
	case VerbReassign:
		in.From, in.Reason = "node-b:4053", "node-b:4053 holds the address but its heartbeat is stale on the stream"
	case VerbRelease:
		in.Owner, in.Reason = "node-b:4053", "node-b:4053 is Primary; this node is Secondary"
	}
	return in
}

// formatPlan renders a plan for the golden files: one line per field,
// one per action with its params in sorted order.
func formatPlan(p Plan) string {
	var b strings.Builder
	in := p.Intent
	fmt.Fprintf(&b, "provider: %s\n", p.Provider)
	fmt.Fprintf(&b, "intent: %s %s cluster=%s self=%s owner=%s from=%s epoch=%d\n", in.Verb, in.Address, in.ClusterID, in.Self, in.Owner, in.From, in.Epoch)
	fmt.Fprintf(&b, "description: %s\n", p.Description)
	fmt.Fprintf(&b, "risk: %s\n", p.Risk)
	b.WriteString("actions:\n")
	for i, a := range p.Actions {
		fmt.Fprintf(&b, "  %d. %s target=%q epoch=%d", i+1, a.Op, a.Target, a.Epoch)
		keys := make([]string, 0, len(a.Params))
		for k := range a.Params {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%s", k, a.Params[k])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestPlanGolden: the plan of every provider and verb (and IPv6 on
// linux, where the announcement differs) as testdata/plans/*.golden,
// byte for byte.
func TestPlanGolden(t *testing.T) {
	for _, tg := range planTargets {
		for _, verb := range planVerbs {
			addrs := []string{"10.0.0.100/24"}
			if tg.Provider == ProviderLinux {
				addrs = append(addrs, "fd00::100/64")
			}
			for _, addr := range addrs {
				name := fmt.Sprintf("%s-%s", tg.Provider, verb)
				if strings.Contains(addr, ":") {
					name += "-ipv6"
				}
				t.Run(name, func(t *testing.T) {
					p, err := PlanFor(intentFor(verb, addr), tg)
					if err != nil {
						t.Fatal(err)
					}
					checkGolden(t, filepath.Join("testdata", "plans", name+".golden"), formatPlan(p))
				})
			}
		}
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if rewriting() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (run with -rewrite to accept):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// TestPlanActionsCarryTheEpoch: every action of every plan carries the
// intent's epoch (so that an executor can fence it) and the address.
func TestPlanActionsCarryTheEpoch(t *testing.T) {
	for _, epoch := range []uint64{0, 1, 7, 1 << 40, math.MaxUint64} {
		for _, tg := range planTargets {
			for _, verb := range planVerbs {
				for _, addr := range []string{"10.0.0.100/24", "fd00::100/64"} {
					in := intentFor(verb, addr)
					in.Epoch = epoch
					p, err := PlanFor(in, tg)
					if err != nil {
						t.Fatalf("%s %s: %v", tg.Provider, verb, err)
					}
					if len(p.Actions) == 0 {
						t.Fatalf("%s %s: no action", tg.Provider, verb)
					}
					for i, a := range p.Actions {
						if a.Epoch != epoch || a.Params["address"] != addr {
							t.Errorf("%s %s epoch %d: action %d %s has epoch %d address %q", tg.Provider, verb, epoch, i, a.Op, a.Epoch, a.Params["address"])
						}
					}
					if p.Intent != in || p.Provider != tg.Provider || !strings.Contains(p.Description, fmt.Sprintf("(epoch %d)", epoch)) {
						t.Errorf("%s %s: plan %+v does not name its intent and epoch", tg.Provider, verb, p)
					}
				}
			}
		}
	}
}

// TestPlanSemantics: what each provider's executor is asked, spelled out
// (the golden files show the same in full).
func TestPlanSemantics(t *testing.T) {
	linux, aws, oci, azure := planTargets[0], planTargets[1], planTargets[2], planTargets[3]
	type step struct{ op, target, key, value string }
	for _, tc := range []struct {
		name  string
		tg    Target
		verb  Verb
		addr  string
		steps []step
	}{
		{"linux seize v4", linux, VerbSeize, "10.0.0.100/24", []step{{OpAddrAdd, "eth0", "", ""}, {OpAnnounce, "eth0", "kind", "garp"}}},
		{"linux reassign v6", linux, VerbReassign, "fd00::100/64", []step{{OpAddrAdd, "eth0", "", ""}, {OpAnnounce, "eth0", "kind", "unsolicited-na"}}},
		{"linux announce count", linux, VerbSeize, "10.0.0.100/24", []step{{OpAddrAdd, "eth0", "", ""}, {OpAnnounce, "eth0", "count", "3"}}},
		{"linux announce interval", linux, VerbSeize, "10.0.0.100/24", []step{{OpAddrAdd, "eth0", "", ""}, {OpAnnounce, "eth0", "interval", "200ms"}}},
		{"linux release", linux, VerbRelease, "10.0.0.100/24", []step{{OpAddrDel, "eth0", "", ""}}},
		{"aws seize", aws, VerbSeize, "10.0.0.100/24", []step{{OpAWSAssign, aws.NetworkInterfaceID, "allow-reassignment", "false"}, {OpAWSConfirm, aws.NetworkInterfaceID, "timeout", "10s"}}},
		{"aws reassign", aws, VerbReassign, "10.0.0.100/24", []step{{OpAWSAssign, aws.NetworkInterfaceID, "allow-reassignment", "true"}, {OpAWSConfirm, aws.NetworkInterfaceID, "timeout", "10s"}}},
		{"aws release", aws, VerbRelease, "10.0.0.100/24", []step{{OpAWSUnassign, aws.NetworkInterfaceID, "", ""}}},
		{"oci seize", oci, VerbSeize, "10.0.0.100/24", []step{{OpOCIAssign, oci.VnicID, "unassign-if-already-assigned", "false"}}},
		{"oci reassign", oci, VerbReassign, "10.0.0.100/24", []step{{OpOCIAssign, oci.VnicID, "unassign-if-already-assigned", "true"}}},
		{"oci release", oci, VerbRelease, "10.0.0.100/24", []step{{OpOCIUnassign, oci.VnicID, "", ""}}},
		{"azure seize", azure, VerbSeize, "10.0.0.100/24", []step{{OpAzureAdd, azure.NIC, "ip-configuration", "floating"}}},
		{"azure reassign", azure, VerbReassign, "10.0.0.100/24", []step{{OpAzureRemove, "", "", ""}, {OpAzureAdd, azure.NIC, "ip-configuration", "floating"}}},
		{"azure release", azure, VerbRelease, "10.0.0.100/24", []step{{OpAzureRemove, azure.NIC, "", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanFor(intentFor(tc.verb, tc.addr), tc.tg)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Actions) != len(tc.steps) {
				t.Fatalf("%d actions, want %d:\n%s", len(p.Actions), len(tc.steps), formatPlan(p))
			}
			for i, s := range tc.steps {
				a := p.Actions[i]
				if a.Op != s.op || a.Target != s.target || s.key != "" && a.Params[s.key] != s.value {
					t.Errorf("action %d = %s target %q params %v, want %s target %q %s=%s", i, a.Op, a.Target, a.Params, s.op, s.target, s.key, s.value)
				}
			}
		})
	}
}

// TestPlanWords: the description reads as the verb, names who gives the
// address to whom, and the risk says what can go wrong half-way.
func TestPlanWords(t *testing.T) {
	p, _ := PlanFor(intentFor(VerbReassign, "10.0.0.100/24"), planTargets[0])
	want := "reassign 10.0.0.100/24 from node-b:4053 to node-a:4053 on eth0 (epoch 7): add the address, announce it 3 times every 200ms (gratuitous ARP) — node-b:4053 holds the address but its heartbeat is stale on the stream"
	if p.Description != want {
		t.Errorf("description\n got %s\nwant %s", p.Description, want)
	}
	in := intentFor(VerbReassign, "10.0.0.100/24")
	in.From, in.Reason = "", ""
	p, _ = PlanFor(in, planTargets[3])
	if !strings.HasPrefix(p.Description, "reassign 10.0.0.100/24 from its unknown holder to node-a:4053 on NIC node-a-nic (epoch 7): remove") || strings.Contains(p.Description, " — ") {
		t.Errorf("azure reassign without a known holder or reason: %s", p.Description)
	}
	for _, tc := range []struct {
		tg   Target
		verb Verb
		risk string
	}{
		{planTargets[3], VerbReassign, "between the remove and the add nobody holds the address"},
		{planTargets[1], VerbReassign, "asynchronous"},
		{planTargets[1], VerbSeize, "asynchronous"},
		{planTargets[2], VerbReassign, "last assignment wins"},
		{planTargets[0], VerbReassign, "two MACs answer"},
	} {
		p, _ := PlanFor(intentFor(tc.verb, "10.0.0.100/24"), tc.tg)
		if !strings.Contains(p.Risk, tc.risk) {
			t.Errorf("%s %s risk %q lacks %q", tc.tg.Provider, tc.verb, p.Risk, tc.risk)
		}
	}
	for _, tg := range planTargets {
		for _, verb := range planVerbs {
			p, _ := PlanFor(intentFor(verb, "10.0.0.100/24"), tg)
			if !strings.HasPrefix(p.Description, string(verb)+" 10.0.0.100/24 ") || p.Risk == "" {
				t.Errorf("%s %s: description %q risk %q", tg.Provider, verb, p.Description, p.Risk)
			}
		}
	}
}

// TestPlanRefusals: no plan for none, wait or an unknown verb, an invalid
// address, an unknown provider or a target without its provider's fields.
func TestPlanRefusals(t *testing.T) {
	good := intentFor(VerbSeize, "10.0.0.100/24")
	with := func(f func(*Intent)) Intent { in := good; f(&in); return in }
	target := func(i int, f func(*Target)) Target { tg := planTargets[i]; f(&tg); return tg }
	for _, tc := range []struct {
		name string
		in   Intent
		tg   Target
		says string
	}{
		{"none", with(func(in *Intent) { in.Verb = VerbNone }), planTargets[0], `verb "none" asks for no action`},
		{"wait", with(func(in *Intent) { in.Verb = VerbWait }), planTargets[1], `verb "wait" asks for no action`},
		{"empty verb", with(func(in *Intent) { in.Verb = "" }), planTargets[2], `verb "" asks for no action`},
		{"unknown verb", with(func(in *Intent) { in.Verb = "grab" }), planTargets[3], `verb "grab"`},
		{"no address", with(func(in *Intent) { in.Address = netip.Prefix{} }), planTargets[0], "no valid floating address"},
		{"unknown provider", good, Target{Provider: "gcp"}, `unknown provider "gcp"`},
		{"linux without interface", good, target(0, func(t *Target) { t.Interface = "" }), "linux target: no Interface"},
		{"linux without announcements", good, target(0, func(t *Target) { t.AnnounceCount = 0 }), "no AnnounceCount"},
		{"linux without interval", good, target(0, func(t *Target) { t.AnnounceInterval = 0 }), "no AnnounceInterval"},
		{"aws without eni", good, target(1, func(t *Target) { t.NetworkInterfaceID = "" }), "aws target: no NetworkInterfaceID"},
		{"aws without timeout", good, target(1, func(t *Target) { t.ConfirmTimeout = 0 }), "no ConfirmTimeout"},
		{"oci without vnic", good, target(2, func(t *Target) { t.VnicID = "" }), "oci target: no VnicID"},
		{"azure without nic", good, target(3, func(t *Target) { t.NIC = "" }), "azure target: no NIC"},
		{"azure without ip configuration", good, target(3, func(t *Target) { t.IPConfiguration = "" }), "no IPConfiguration"},
		{"release needs the target too", with(func(in *Intent) { in.Verb = VerbRelease }), target(0, func(t *Target) { t.Interface = "" }), "no Interface"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanFor(tc.in, tc.tg)
			if !errors.Is(err, ErrNoPlan) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("err %v, want ErrNoPlan saying %q", err, tc.says)
			}
			if !reflect.DeepEqual(p, Plan{}) {
				t.Fatalf("refused, yet a plan: %+v", p)
			}
		})
	}
	// Another provider's fields are not needed.
	if _, err := PlanFor(good, Target{Provider: ProviderOCI, VnicID: "ocid1.vnic.x"}); err != nil {
		t.Fatalf("oci target with only its own field: %v", err)
	}
}

// TestPlanIsPure: the same inputs give equal plans, and a plan's params
// are its own (changing one plan's map leaves the next plan alone).
func TestPlanIsPure(t *testing.T) {
	for _, tg := range planTargets {
		in := intentFor(VerbReassign, "10.0.0.100/24")
		a, _ := PlanFor(in, tg)
		a.Actions[0].Params["address"] = "changed"
		b, _ := PlanFor(in, tg)
		c, _ := PlanFor(in, tg)
		if !reflect.DeepEqual(b, c) || b.Actions[0].Params["address"] != "10.0.0.100/24" {
			t.Errorf("%s: plans differ or share params: %+v / %+v", tg.Provider, b, c)
		}
	}
}
