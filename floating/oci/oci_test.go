package oci

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oracle/oci-go-sdk/v65/common"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/floating/oci/ocifake"
)

const (
	floatIP = "10.0.2.50"
	subnet  = "ocid1.subnet.s1"
	keyID   = "ocid1.tenancy.t1/ocid1.user.u1/aa:bb"
)

var (
	keyOnce sync.Once
	key     *rsa.PrivateKey
)

func signingKey(t *testing.T) *rsa.PrivateKey {
	keyOnce.Do(func() {
		var err error
		if key, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			t.Fatal(err)
		}
	})
	return key
}

// rig is one fake API with three VNICs in one subnet: vnic-a (node
// a:4840), vnic-b (member b:4840), vnic-x (foreign), and node a's executor.
type rig struct {
	fake  *ocifake.Server
	exe   *Executor
	fence *floating.FileFence
}

func newRig(t *testing.T, opt ocifake.Options) *rig {
	t.Helper()
	opt.KeyID, opt.PublicKey = keyID, &signingKey(t).PublicKey
	fake := ocifake.New(opt)
	t.Cleanup(fake.Close)
	for i, id := range []string{"vnic-a", "vnic-b", "vnic-x"} {
		fake.AddVNIC(ocifake.VNIC{ID: id, Subnet: subnet, Primary: "10.0.2.1" + string(rune('0'+i))})
	}
	r := &rig{fake: fake}
	r.exe, r.fence = r.executor(t, "a:4840", "vnic-a", signingKey(t))
	return r
}

func (r *rig) executor(t *testing.T, self, vnic string, k *rsa.PrivateKey) (*Executor, *floating.FileFence) {
	t.Helper()
	fence, err := floating.OpenFileFence(filepath.Join(t.TempDir(), "epoch"))
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	members := map[string]string{"vnic-a": "a:4840", "vnic-b": "b:4840"}
	subnetFor := map[string]string{"vnic-b": subnet}
	exe, err := New(Config{
		Self:        self,
		VNIC:        vnic,
		Subnet:      subnetFor[vnic], // node a reads it from its VNIC
		Address:     netip.MustParsePrefix(floatIP + "/32"),
		Endpoint:    r.fake.URL,
		Credentials: common.NewRawConfigurationProvider("ocid1.tenancy.t1", "ocid1.user.u1", "eu-frankfurt-1", "aa:bb", pemKey, nil),
		Fence:       fence,
		Known: func(id string) (string, bool) {
			m, ok := members[id]
			return m, ok && id != vnic
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return exe, fence
}

func plan(verb floating.Verb, epoch uint64, actions ...floating.Action) floating.Plan {
	return floating.Plan{
		Provider: floating.ProviderOCI,
		Intent:   floating.Intent{ClusterID: "c1", Address: netip.MustParsePrefix(floatIP + "/32"), Self: "a:4840", Owner: "a:4840", Verb: verb, Epoch: epoch},
		Actions:  actions,
	}
}

func assign(epoch uint64, force bool) floating.Plan {
	verb := floating.VerbSeize
	if force {
		verb = floating.VerbReassign
	}
	f := "false"
	if force {
		f = "true"
	}
	return plan(verb, epoch, floating.Action{Op: floating.OpOCIAssign, Epoch: epoch,
		Params: map[string]string{"address": floatIP + "/32", "unassign-if-already-assigned": f}})
}

func release(epoch uint64) floating.Plan {
	return plan(floating.VerbRelease, epoch, floating.Action{Op: floating.OpOCIUnassign, Epoch: epoch,
		Params: map[string]string{"address": floatIP + "/32"}})
}

func TestSeizeCreatesThePrivateIPWithItsEpoch(t *testing.T) {
	r := newRig(t, ocifake.Options{})
	if err := r.exe.Apply(context.Background(), assign(3, false)); err != nil {
		t.Fatal(err)
	}
	if h := r.fake.Holder(floatIP); h != "vnic-a" {
		t.Fatalf("holder %q, want vnic-a", h)
	}
	if v := r.fake.Tags(floatIP)[EpochTag]; v != "3" {
		t.Fatalf("epoch tag %q, want 3", v)
	}
	if n := r.fake.Calls("POST"); n != 1 {
		t.Fatalf("%d creates, want 1", n)
	}
}

func TestReleaseDeletesOnlyItsOwnPrivateIP(t *testing.T) {
	for _, tc := range []struct {
		holder, after string
		deletes       int
	}{
		{"vnic-a", "", 1},
		{"vnic-b", "vnic-b", 0}, // a member's: nothing of this node's to give up
		{"", "", 0},
	} {
		t.Run("held by "+tc.holder, func(t *testing.T) {
			r := newRig(t, ocifake.Options{})
			if tc.holder != "" {
				r.fake.Place(tc.holder, floatIP, map[string]string{EpochTag: "2"})
			}
			if err := r.exe.Apply(context.Background(), release(4)); err != nil {
				t.Fatal(err)
			}
			if h := r.fake.Holder(floatIP); h != tc.after {
				t.Fatalf("holder %q, want %q", h, tc.after)
			}
			if n := r.fake.Calls("DELETE"); n != tc.deletes {
				t.Fatalf("%d deletes, want %d", n, tc.deletes)
			}
		})
	}
}

func TestReassignMovesTheMembersPrivateIPUnderIfMatch(t *testing.T) {
	r := newRig(t, ocifake.Options{})
	r.fake.Place("vnic-b", floatIP, map[string]string{EpochTag: "4", "owner": "plant"})
	if err := r.exe.Apply(context.Background(), assign(5, true)); err != nil {
		t.Fatal(err)
	}
	if h := r.fake.Holder(floatIP); h != "vnic-a" {
		t.Fatalf("holder %q, want vnic-a", h)
	}
	tags := r.fake.Tags(floatIP)
	if tags[EpochTag] != "5" || tags["owner"] != "plant" {
		t.Fatalf("tags %v: want the epoch 5 and the other tags kept", tags)
	}
	if r.fake.Calls("POST") != 0 || r.fake.Calls("PUT") != 1 {
		t.Fatalf("want one update and no create, got %d creates, %d updates", r.fake.Calls("POST"), r.fake.Calls("PUT"))
	}
}

func TestConflicts(t *testing.T) {
	for _, tc := range []struct {
		name, holder string
		force        bool
		touch        bool
		updates      int
	}{
		{"member's without unassign-if-already-assigned", "vnic-b", false, false, 0},
		{"foreign holder", "vnic-x", true, false, 0},
		{"changed between read and move", "vnic-b", true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			opt := ocifake.Options{}
			if tc.touch {
				opt.AfterGet = func(string) { r.fake.Touch(floatIP) }
			}
			r = newRig(t, opt)
			r.fake.Place(tc.holder, floatIP, nil)
			err := r.exe.Apply(context.Background(), assign(5, tc.force))
			if !errors.Is(err, floating.ErrConflict) {
				t.Fatalf("want ErrConflict, got %v", err)
			}
			if h := r.fake.Holder(floatIP); h != tc.holder {
				t.Fatalf("holder %q, want %q", h, tc.holder)
			}
			if n := r.fake.Calls("PUT"); n != tc.updates || r.fake.Calls("POST") != 0 {
				t.Fatalf("%d updates (want %d), %d creates", n, tc.updates, r.fake.Calls("POST"))
			}
		})
	}
}

func TestStaleEpochIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holder  string
		tag     string
		fence   uint64
		plan    floating.Plan
		last    uint64
		anyCall bool
	}{
		{"local fence", "vnic-b", "", 7, assign(6, true), 7, false},
		{"object's tag on reassign", "vnic-b", "9", 0, assign(8, true), 9, true},
		{"object's tag on release", "vnic-a", "9", 0, release(8), 9, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ocifake.Options{})
			r.fake.Place(tc.holder, floatIP, map[string]string{EpochTag: tc.tag})
			if tc.fence > 0 {
				r.fence.Admit(tc.fence)
			}
			err := r.exe.Apply(context.Background(), tc.plan)
			var se *floating.StaleEpochError
			if !errors.As(err, &se) || se.Last != tc.last || !errors.Is(err, floating.ErrStaleEpoch) {
				t.Fatalf("want a refusal at epoch %d, got %v", tc.last, err)
			}
			if h := r.fake.Holder(floatIP); h != tc.holder {
				t.Fatalf("holder %q, want %q", h, tc.holder)
			}
			if r.fake.Writes() != 0 || (!tc.anyCall && r.fake.Calls("") != 0) {
				t.Fatalf("%d writes, %d requests for a stale plan", r.fake.Writes(), r.fake.Calls(""))
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
		{"vnic-a", "a:4840", floating.HolderSelf},
		{"vnic-b", "b:4840", floating.HolderMember},
		{"vnic-x", "", floating.HolderForeign},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			r := newRig(t, ocifake.Options{})
			if tc.holder != "" {
				r.fake.Place(tc.holder, floatIP, nil)
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

func TestAnotherKeyIsRefusedBySignatureCheck(t *testing.T) {
	r := newRig(t, ocifake.Options{})
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := r.executor(t, "a:4840", "vnic-a", other)
	_, err = bad.Observe(context.Background())
	var se *ServiceError
	if !errors.As(err, &se) || se.Code != "NotAuthenticated" {
		t.Fatalf("want NotAuthenticated, got %v", err)
	}
}

func TestMalformedPlansAreRefusedBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    floating.Action
		want string
	}{
		{"action epoch differs", floating.Action{Op: floating.OpOCIUnassign, Epoch: 4}, "carries epoch 4"},
		{"another VNIC", floating.Action{Op: floating.OpOCIUnassign, Target: "vnic-b", Epoch: 5}, "not this node's VNIC"},
		{"another address", floating.Action{Op: floating.OpOCIUnassign, Epoch: 5, Params: map[string]string{"address": "10.0.2.51/32"}}, "not the floating address"},
		{"aws op", floating.Action{Op: floating.OpAWSAssign, Epoch: 5}, "unknown op"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, ocifake.Options{})
			err := r.exe.Apply(context.Background(), plan(floating.VerbRelease, 5, tc.a))
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
// for a failover from a to b: a seizes at epoch 3, b reassigns with
// unassign-if-already-assigned at epoch 4, a's late plans of epoch 3 find
// epoch 4 on the private IP and are refused.
func TestFailoverFencesTheOldOwnersLatePlans(t *testing.T) {
	r := newRig(t, ocifake.Options{})
	b, _ := r.executor(t, "b:4840", "vnic-b", signingKey(t))
	ctx := context.Background()
	if err := r.exe.Apply(ctx, assign(3, false)); err != nil {
		t.Fatalf("a seizes: %v", err)
	}
	p := assign(4, true)
	p.Intent.Self, p.Intent.Owner, p.Intent.From = "b:4840", "b:4840", "a:4840"
	if err := b.Apply(ctx, p); err != nil {
		t.Fatalf("b reassigns: %v", err)
	}
	if err := r.exe.Apply(ctx, assign(3, true)); !errors.Is(err, floating.ErrStaleEpoch) {
		t.Fatalf("a's late reassign of epoch 3: %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "vnic-b" {
		t.Fatalf("holder %q, want vnic-b", h)
	}
	o, err := r.exe.Observe(ctx)
	if err != nil || o.Kind != floating.HolderMember || o.Member != "b:4840" {
		t.Fatalf("a observes %+v, %v", o, err)
	}
}
