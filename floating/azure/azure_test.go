package azure

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/floating/azure/azurefake"
)

const (
	floatIP = "10.0.3.50"
	token   = "floating-test-token"
	subnet  = "/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Network/virtualNetworks/v1/subnets/plant"
)

type staticToken string

func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}

// rig is one fake resource group with three NICs in one subnet: nic-a
// (node a:4840), nic-b (member b:4840), nic-x (foreign), and node a's
// executor.
type rig struct {
	fake  *azurefake.Server
	exe   *Executor
	fence *floating.FileFence
}

func newRig(t *testing.T, opt azurefake.Options) *rig {
	t.Helper()
	opt.Token = token
	fake := azurefake.New(opt)
	t.Cleanup(fake.Close)
	for i, name := range []string{"nic-a", "nic-b", "nic-x"} {
		fake.AddNIC(azurefake.NIC{Name: name, Subnet: subnet, Primary: "10.0.3.1" + string(rune('0'+i))})
	}
	r := &rig{fake: fake}
	r.exe, r.fence = r.executor(t, "a:4840", "nic-a", token)
	return r
}

func (r *rig) executor(t *testing.T, self, name, tok string) (*Executor, *floating.FileFence) {
	t.Helper()
	fence, err := floating.OpenFileFence(filepath.Join(t.TempDir(), "epoch"))
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]string{"nic-a": "a:4840", "nic-b": "b:4840"}
	exe, err := New(Config{
		Self: self, Subscription: "s1", ResourceGroup: "rg1", NIC: name,
		Address:    netip.MustParsePrefix(floatIP + "/32"),
		Endpoint:   r.fake.URL,
		Credential: staticToken(tok),
		Transport:  r.fake.Client,
		Fence:      fence,
		Known: func(id string) (string, bool) {
			m, ok := members[id]
			return m, ok && id != name
		},
		PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return exe, fence
}

func plan(verb floating.Verb, epoch uint64, actions ...floating.Action) floating.Plan {
	return floating.Plan{
		Provider: floating.ProviderAzure,
		Intent:   floating.Intent{ClusterID: "c1", Address: netip.MustParsePrefix(floatIP + "/32"), Self: "a:4840", Owner: "a:4840", Verb: verb, Epoch: epoch},
		Actions:  actions,
	}
}

func remove(epoch uint64, target string) floating.Action {
	return floating.Action{Op: floating.OpAzureRemove, Target: target, Epoch: epoch, Params: map[string]string{"address": floatIP + "/32"}}
}

func add(epoch uint64) floating.Action {
	return floating.Action{Op: floating.OpAzureAdd, Epoch: epoch, Params: map[string]string{"address": floatIP + "/32", "ip-configuration": "otopcua-floating"}}
}

func seize(epoch uint64) floating.Plan { return plan(floating.VerbSeize, epoch, add(epoch)) }

func reassign(epoch uint64, from string) floating.Plan {
	return plan(floating.VerbReassign, epoch, remove(epoch, from), add(epoch))
}

func release(epoch uint64) floating.Plan {
	return plan(floating.VerbRelease, epoch, remove(epoch, "nic-a"))
}

func TestSeizeAddsAStaticIPConfigurationAndWaitsForProvisioning(t *testing.T) {
	r := newRig(t, azurefake.Options{Provisioning: 3})
	if err := r.exe.Apply(context.Background(), seize(3)); err != nil {
		t.Fatal(err)
	}
	if h := r.fake.Holder(floatIP); h != "nic-a" {
		t.Fatalf("holder %q, want nic-a", h)
	}
	if v := r.fake.Tag("nic-a", EpochTag); v != "3" {
		t.Fatalf("epoch tag %q, want 3", v)
	}
	if r.fake.Field("nic-a", "enableAcceleratedNetworking") != true {
		t.Fatal("the PUT dropped a property of the NIC it does not know")
	}
	// One GET before the PUT, then reads until the three Updating ones are over.
	if n := r.fake.Calls("GET"); n != 1+3+1 {
		t.Fatalf("%d reads, want 5 (one before the write, four until Succeeded)", n)
	}
}

func TestReleaseRemovesOnlyTheFloatingIPConfiguration(t *testing.T) {
	r := newRig(t, azurefake.Options{})
	r.fake.Place("nic-a", floatIP)
	for i := range 2 {
		if err := r.exe.Apply(context.Background(), release(4)); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
	}
	if h := r.fake.Holder(floatIP); h != "" {
		t.Fatalf("holder %q after release", h)
	}
	if h := r.fake.Holder("10.0.3.10"); h != "nic-a" {
		t.Fatalf("the primary address went with it: holder %q", h)
	}
	if n := r.fake.Calls("PUT"); n != 1 {
		t.Fatalf("%d writes, want 1 (the second release finds nothing to remove)", n)
	}
}

func TestReassignRemovesFromTheMemberThenAdds(t *testing.T) {
	for _, target := range []string{"nic-b", ""} { // named by the plan, or found by listing
		t.Run("target "+target, func(t *testing.T) {
			r := newRig(t, azurefake.Options{})
			r.fake.Place("nic-b", floatIP)
			r.fake.SetTag("nic-b", EpochTag, "4")
			if err := r.exe.Apply(context.Background(), reassign(5, target)); err != nil {
				t.Fatal(err)
			}
			if h := r.fake.Holder(floatIP); h != "nic-a" {
				t.Fatalf("holder %q, want nic-a", h)
			}
			for _, n := range []string{"nic-a", "nic-b"} {
				if v := r.fake.Tag(n, EpochTag); v != "5" {
					t.Fatalf("%s epoch tag %q, want 5", n, v)
				}
			}
		})
	}
}

func TestAddWhileAnotherNICStillCarriesTheAddressIsAConflict(t *testing.T) {
	r := newRig(t, azurefake.Options{})
	r.fake.Place("nic-b", floatIP)
	err := r.exe.Apply(context.Background(), seize(5))
	if !errors.Is(err, floating.ErrConflict) || !strings.Contains(err.Error(), "PrivateIPAddressInUse") {
		t.Fatalf("want ErrConflict from PrivateIPAddressInUse, got %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "nic-b" {
		t.Fatalf("holder %q, want nic-b", h)
	}
}

func TestForeignHolderIsNeverWritten(t *testing.T) {
	r := newRig(t, azurefake.Options{})
	r.fake.Place("nic-x", floatIP)
	o, err := r.exe.Observe(context.Background())
	if err != nil || o.Kind != floating.HolderForeign || o.ID != "nic-x" {
		t.Fatalf("observed %+v, %v", o, err)
	}
	if err := r.exe.Apply(context.Background(), reassign(5, "")); !errors.Is(err, floating.ErrConflict) {
		t.Fatalf("want ErrConflict, got %v", err)
	}
	if r.fake.Calls("PUT") != 0 || r.fake.Holder(floatIP) != "nic-x" {
		t.Fatalf("%d writes, holder %q", r.fake.Calls("PUT"), r.fake.Holder(floatIP))
	}
}

// TestAConcurrentChangeBetweenTheStepsIs412ThenReplanned: the remove from
// nic-b succeeds, someone writes nic-a between the add's read and its
// write, the add gets 412 (ErrConflict) and the address is held by nobody;
// the re-observation says none and the re-plan (a seize) takes it.
func TestAConcurrentChangeBetweenTheStepsIs412ThenReplanned(t *testing.T) {
	var r *rig
	touched := false
	r = newRig(t, azurefake.Options{AfterGet: func(name string) {
		if name == "nic-a" && !touched {
			touched = true
			r.fake.Touch("nic-a")
		}
	}})
	r.fake.Place("nic-b", floatIP)
	err := r.exe.Apply(context.Background(), reassign(5, "nic-b"))
	if !errors.Is(err, floating.ErrConflict) || !strings.Contains(err.Error(), "412") || !strings.Contains(err.Error(), "action 2/2") {
		t.Fatalf("want a 412 conflict on the add, got %v", err)
	}
	o, err := r.exe.Observe(context.Background())
	if err != nil || o.Kind != floating.HolderNone {
		t.Fatalf("after the half-done move observed %+v, %v", o, err)
	}
	if err := r.exe.Apply(context.Background(), seize(5)); err != nil {
		t.Fatalf("re-planned seize: %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "nic-a" {
		t.Fatalf("holder %q, want nic-a", h)
	}
}

func TestStaleEpochIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(r *rig)
		plan    floating.Plan
		last    uint64
		anyCall bool
	}{
		{"local fence", func(r *rig) { r.fence.Admit(7) }, reassign(6, "nic-b"), 7, false},
		{"holder's tag", func(r *rig) { r.fake.SetTag("nic-b", EpochTag, "9") }, reassign(8, "nic-b"), 9, true},
		{"own tag", func(r *rig) { r.fake.SetTag("nic-a", EpochTag, "9") }, plan(floating.VerbSeize, 8, add(8)), 9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, azurefake.Options{})
			r.fake.Place("nic-b", floatIP)
			tc.setup(r)
			err := r.exe.Apply(context.Background(), tc.plan)
			var se *floating.StaleEpochError
			if !errors.As(err, &se) || se.Last != tc.last || !errors.Is(err, floating.ErrStaleEpoch) {
				t.Fatalf("want a refusal at epoch %d, got %v", tc.last, err)
			}
			if r.fake.Calls("PUT") != 0 || r.fake.Holder(floatIP) != "nic-b" {
				t.Fatalf("%d writes, holder %q", r.fake.Calls("PUT"), r.fake.Holder(floatIP))
			}
			if !tc.anyCall && r.fake.Calls("") != 0 {
				t.Fatalf("%d requests for a plan the local fence refuses", r.fake.Calls(""))
			}
		})
	}
}

func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		holder, member string
		kind           floating.HolderKind
	}{
		{"", "", floating.HolderNone},
		{"nic-a", "a:4840", floating.HolderSelf},
		{"nic-b", "b:4840", floating.HolderMember},
		{"nic-x", "", floating.HolderForeign},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			r := newRig(t, azurefake.Options{})
			if tc.holder != "" {
				r.fake.Place(tc.holder, floatIP)
			}
			o, err := r.exe.Observe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != tc.kind || o.ID != tc.holder || o.Member != tc.member {
				t.Fatalf("observed %+v, want %s %q %q", o, tc.kind, tc.holder, tc.member)
			}
		})
	}
}

func TestAWrongTokenIsRefused(t *testing.T) {
	r := newRig(t, azurefake.Options{})
	bad, _ := r.executor(t, "a:4840", "nic-a", "not-the-token")
	_, err := bad.Observe(context.Background())
	var re *azcore.ResponseError
	if !errors.As(err, &re) || re.ErrorCode != "AuthenticationFailed" {
		t.Fatalf("want AuthenticationFailed, got %v", err)
	}
}

func TestMalformedPlansAreRefusedBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    floating.Action
		want string
	}{
		{"action epoch differs", add(4), "carries epoch 4"},
		{"add to another NIC", floating.Action{Op: floating.OpAzureAdd, Target: "nic-b", Epoch: 5, Params: map[string]string{"ip-configuration": "f"}}, "not this node's NIC"},
		{"no ip-configuration name", floating.Action{Op: floating.OpAzureAdd, Epoch: 5}, "ip-configuration"},
		{"another address", floating.Action{Op: floating.OpAzureRemove, Epoch: 5, Params: map[string]string{"address": "10.0.3.51/32"}}, "not the floating address"},
		{"oci op", floating.Action{Op: floating.OpOCIAssign, Epoch: 5}, "unknown op"},
		{"NIC of another resource group", floating.Action{Op: floating.OpAzureRemove, Epoch: 5, Target: "/subscriptions/s1/resourceGroups/other/providers/Microsoft.Network/networkInterfaces/nic-a"}, "outside subscription s1"},
		{"not a NIC id", floating.Action{Op: floating.OpAzureRemove, Epoch: 5, Target: "/subscriptions/s1/resourceGroups/rg1/providers/Microsoft.Compute/virtualMachines/vm-a"}, "not a NIC resource id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, azurefake.Options{})
			err := r.exe.Apply(context.Background(), plan(floating.VerbSeize, 5, tc.a))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if r.fence.Last() != 0 || r.fake.Calls("") != 0 {
				t.Fatalf("refused plan moved the fence to %d or sent %d requests", r.fence.Last(), r.fake.Calls(""))
			}
		})
	}
}

// TestFailoverFencesTheOldOwnersLatePlans runs the plans the planner emits
// for a failover from a to b: a seizes at epoch 3, b removes from nic-a
// and adds to nic-b at epoch 4, then a's late plans of epoch 3 find epoch
// 4 on the NICs and are refused.
func TestFailoverFencesTheOldOwnersLatePlans(t *testing.T) {
	r := newRig(t, azurefake.Options{Provisioning: 1})
	b, _ := r.executor(t, "b:4840", "nic-b", token)
	ctx := context.Background()
	if err := r.exe.Apply(ctx, seize(3)); err != nil {
		t.Fatalf("a seizes: %v", err)
	}
	p := reassign(4, "nic-a")
	p.Intent.Self, p.Intent.Owner, p.Intent.From = "b:4840", "b:4840", "a:4840"
	if err := b.Apply(ctx, p); err != nil {
		t.Fatalf("b reassigns: %v", err)
	}
	for _, late := range []floating.Plan{seize(3), reassign(3, "nic-b")} {
		if err := r.exe.Apply(ctx, late); !errors.Is(err, floating.ErrStaleEpoch) {
			t.Fatalf("a's late %s of epoch 3: %v", late.Intent.Verb, err)
		}
	}
	if h := r.fake.Holder(floatIP); h != "nic-b" {
		t.Fatalf("holder %q, want nic-b", h)
	}
	o, err := r.exe.Observe(ctx)
	if err != nil || o.Kind != floating.HolderMember || o.Member != "b:4840" {
		t.Fatalf("a observes %+v, %v", o, err)
	}
}
