package aws

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/otopcua/otopcua/floating"
	"github.com/otopcua/otopcua/floating/aws/awsfake"
)

const (
	floatIP = "10.0.1.50"
	region  = "eu-west-1"
	keyID   = "AKIDFLOATINGTEST"
	secret  = "floating-test-secret"
)

// rig is one fake EC2 with three interfaces in one subnet: eni-a (node
// a:4840), eni-b (member b:4840) and eni-x (foreign), and the executor of
// node a.
type rig struct {
	fake  *awsfake.Server
	exe   *Executor
	fence *floating.FileFence
}

func newRig(t *testing.T, lag time.Duration) *rig {
	t.Helper()
	return newRigWith(t, awsfake.Options{Lag: lag})
}

func newRigWith(t *testing.T, opt awsfake.Options) *rig {
	t.Helper()
	opt.Region, opt.AccessKey, opt.SecretKey = region, keyID, secret
	fake := awsfake.New(opt)
	t.Cleanup(fake.Close)
	for i, id := range []string{"eni-a", "eni-b", "eni-x"} {
		fake.AddENI(awsfake.ENI{ID: id, MAC: "02:00:00:00:00:0" + string(rune('1'+i)), VPC: "vpc-1", Subnet: "subnet-1", Primary: "10.0.1.1" + string(rune('0'+i))})
	}
	r := &rig{fake: fake}
	r.exe, r.fence = r.executor(t, "a:4840", "eni-a", secret)
	return r
}

// executor builds the executor of node self on eni with its own fence.
func (r *rig) executor(t *testing.T, self, eni, key string) (*Executor, *floating.FileFence) {
	t.Helper()
	fence, err := floating.OpenFileFence(filepath.Join(t.TempDir(), "epoch"))
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]string{"eni-a": "a:4840", "eni-b": "b:4840"}
	exe, err := New(Config{
		Self:             self,
		ENI:              eni,
		Address:          netip.MustParsePrefix(floatIP + "/32"),
		Region:           region,
		Endpoint:         r.fake.EC2URL,
		MetadataEndpoint: r.fake.MetadataURL,
		Credentials:      credentials.NewStaticCredentialsProvider(keyID, key, ""),
		Fence:            fence,
		Known: func(id string) (string, bool) {
			m, ok := members[id]
			return m, ok && id != eni
		},
		PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return exe, fence
}

func act(op string, epoch uint64, kv ...string) floating.Action {
	p := map[string]string{"address": floatIP + "/32"}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i]] = kv[i+1]
	}
	return floating.Action{Op: op, Params: p, Epoch: epoch}
}

func plan(verb floating.Verb, epoch uint64, actions ...floating.Action) floating.Plan {
	return floating.Plan{
		Provider: floating.ProviderAWS,
		Intent:   floating.Intent{ClusterID: "c1", Address: netip.MustParsePrefix(floatIP + "/32"), Self: "a:4840", Owner: "a:4840", Verb: verb, Epoch: epoch},
		Actions:  actions,
	}
}

func seize(epoch uint64, timeout string) floating.Plan {
	return plan(floating.VerbSeize, epoch,
		act(floating.OpAWSAssign, epoch, "allow-reassignment", "false"),
		act(floating.OpAWSConfirm, epoch, "timeout", timeout))
}

func reassign(epoch uint64) floating.Plan {
	return plan(floating.VerbReassign, epoch,
		act(floating.OpAWSAssign, epoch, "allow-reassignment", "true"),
		act(floating.OpAWSConfirm, epoch, "timeout", "10s"))
}

func release(epoch uint64) floating.Plan {
	return plan(floating.VerbRelease, epoch, act(floating.OpAWSUnassign, epoch))
}

func TestSeizeWaitsUntilInstanceMetadataListsTheAddress(t *testing.T) {
	const lag = 300 * time.Millisecond
	r := newRig(t, lag)
	start := time.Now()
	if err := r.exe.Apply(context.Background(), seize(3, "10s")); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < lag {
		t.Fatalf("seize returned after %v, before metadata (lag %v) could list the address", took, lag)
	}
	if h := r.fake.Holder(floatIP); h != "eni-a" {
		t.Fatalf("holder %q, want eni-a", h)
	}
	if v := r.fake.Tag("eni-a", EpochTag); v != "3" {
		t.Fatalf("epoch tag %q, want 3", v)
	}
	if r.fence.Last() != 3 {
		t.Fatalf("fence at %d, want 3", r.fence.Last())
	}
}

func TestConfirmFailsWhenMetadataNeverListsTheAddress(t *testing.T) {
	r := newRig(t, time.Hour)
	err := r.exe.Apply(context.Background(), seize(3, "150ms"))
	if err == nil || !strings.Contains(err.Error(), "does not list "+floatIP) || !strings.Contains(err.Error(), "action 2/2 "+floating.OpAWSConfirm) {
		t.Fatalf("confirm under an hour of lag: %v", err)
	}
}

func TestReleaseUnassignsAndIsIdempotent(t *testing.T) {
	r := newRig(t, 0)
	r.fake.Place("eni-a", floatIP)
	for i := range 2 {
		if err := r.exe.Apply(context.Background(), release(4)); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
	}
	if h := r.fake.Holder(floatIP); h != "" {
		t.Fatalf("holder %q after release", h)
	}
	if n := r.fake.Calls("UnassignPrivateIpAddresses"); n != 1 {
		t.Fatalf("%d unassign calls, want 1 (the second release finds nothing to give up)", n)
	}
}

func TestReassignTakesTheAddressFromAMemberAndMarksItsENI(t *testing.T) {
	r := newRig(t, 50*time.Millisecond)
	r.fake.Place("eni-b", floatIP)
	r.fake.SetTag("eni-b", EpochTag, "4")
	if err := r.exe.Apply(context.Background(), reassign(5)); err != nil {
		t.Fatal(err)
	}
	if h := r.fake.Holder(floatIP); h != "eni-a" {
		t.Fatalf("holder %q, want eni-a", h)
	}
	for _, id := range []string{"eni-a", "eni-b"} {
		if v := r.fake.Tag(id, EpochTag); v != "5" {
			t.Fatalf("%s epoch tag %q, want 5", id, v)
		}
	}
}

func TestConflicts(t *testing.T) {
	for _, tc := range []struct {
		name, holder string
		plan         floating.Plan
		assigns      int
	}{
		// EC2 itself refuses: PrivateIpAddressInUse.
		{"member's address without reassignment", "eni-b", seize(5, "1s"), 1},
		// Never sent: a foreign holder is not fought over.
		{"foreign holder with reassignment", "eni-x", reassign(5), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 0)
			r.fake.Place(tc.holder, floatIP)
			err := r.exe.Apply(context.Background(), tc.plan)
			if !errors.Is(err, floating.ErrConflict) {
				t.Fatalf("want ErrConflict, got %v", err)
			}
			if h := r.fake.Holder(floatIP); h != tc.holder {
				t.Fatalf("holder %q, want %q", h, tc.holder)
			}
			if n := r.fake.Calls("AssignPrivateIpAddresses"); n != tc.assigns {
				t.Fatalf("%d assign calls, want %d", n, tc.assigns)
			}
		})
	}
}

func TestStaleEpochIsRefusedBeforeTheAddressMoves(t *testing.T) {
	for _, tc := range []struct {
		name      string
		setup     func(r *rig)
		plan      floating.Plan
		last      uint64
		holder    string
		mutations int // assign/unassign/tag calls allowed: none
		anyCall   bool
	}{
		{"local fence", func(r *rig) {
			r.fence.Admit(7)
		}, reassign(6), 7, "eni-b", 0, false},
		{"holder's tag", func(r *rig) {
			r.fake.SetTag("eni-b", EpochTag, "9")
		}, reassign(8), 9, "eni-b", 0, true},
		{"own tag on release", func(r *rig) {
			r.fake.Place("eni-a", floatIP)
			r.fake.SetTag("eni-a", EpochTag, "9")
		}, release(8), 9, "eni-a", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 0)
			r.fake.Place("eni-b", floatIP)
			tc.setup(r)
			err := r.exe.Apply(context.Background(), tc.plan)
			var se *floating.StaleEpochError
			if !errors.Is(err, floating.ErrStaleEpoch) || !errors.As(err, &se) || se.Last != tc.last {
				t.Fatalf("want a stale epoch refusal at %d, got %v", tc.last, err)
			}
			if h := r.fake.Holder(floatIP); h != tc.holder {
				t.Fatalf("holder %q, want %q", h, tc.holder)
			}
			writes := r.fake.Calls("AssignPrivateIpAddresses") + r.fake.Calls("UnassignPrivateIpAddresses") + r.fake.Calls("CreateTags")
			if writes != 0 {
				t.Fatalf("%d writes sent for a stale plan", writes)
			}
			if !tc.anyCall && r.fake.Calls("") != 0 {
				t.Fatalf("%d requests sent for a plan the local fence refuses", r.fake.Calls(""))
			}
		})
	}
}

func TestObserve(t *testing.T) {
	for _, tc := range []struct {
		holder, id, member string
		kind               floating.HolderKind
	}{
		{"", "", "", floating.HolderNone},
		{"eni-a", "eni-a", "a:4840", floating.HolderSelf},
		{"eni-b", "eni-b", "b:4840", floating.HolderMember},
		{"eni-x", "eni-x", "", floating.HolderForeign},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			r := newRig(t, 0)
			if tc.holder != "" {
				r.fake.Place(tc.holder, floatIP)
			}
			o, err := r.exe.Observe(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if o.Kind != tc.kind || o.ID != tc.id || o.Member != tc.member || o.At.IsZero() {
				t.Fatalf("observed %+v, want %s %q %q", o, tc.kind, tc.id, tc.member)
			}
		})
	}
}

func TestMalformedPlansAreRefusedBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		plan floating.Plan
		want string
	}{
		{"action epoch differs", plan(floating.VerbSeize, 5, act(floating.OpAWSAssign, 4, "allow-reassignment", "false")), "carries epoch 4"},
		{"another ENI", plan(floating.VerbSeize, 5, floating.Action{Op: floating.OpAWSUnassign, Target: "eni-b", Epoch: 5}), "not this node's ENI"},
		{"another address", plan(floating.VerbRelease, 5, floating.Action{Op: floating.OpAWSUnassign, Params: map[string]string{"address": "10.0.1.51"}, Epoch: 5}), "is not the floating address"},
		{"linux op", plan(floating.VerbSeize, 5, act(floating.OpAddrAdd, 5)), "unknown op"},
		{"no timeout", plan(floating.VerbSeize, 5, act(floating.OpAWSConfirm, 5)), "duration"},
		{"other provider", floating.Plan{Provider: floating.ProviderOCI}, "provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 0)
			err := r.exe.Apply(context.Background(), tc.plan)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %q, got %v", tc.want, err)
			}
			if r.fence.Last() != 0 || r.fake.Calls("") != 0 {
				t.Fatalf("a refused plan moved the fence to %d or sent %d requests", r.fence.Last(), r.fake.Calls(""))
			}
		})
	}
}

func TestAWrongSecretIsRefusedByTheSignatureCheck(t *testing.T) {
	r := newRig(t, 0)
	bad, _ := r.executor(t, "a:4840", "eni-a", "not-the-secret")
	_, err := bad.Observe(context.Background())
	var api *APIError
	if !errors.As(err, &api) || api.Code != "SignatureDoesNotMatch" {
		t.Fatalf("want SignatureDoesNotMatch, got %v", err)
	}
}

// TestPlannedFailoverFencesTheOldOwnersLateRelease runs the plans the
// planner emits for a failover from a to b: a seizes at epoch 3, b
// reassigns at epoch 4 while a is cut off, then a's late release of epoch
// 3 reaches EC2 and is refused by the tag b left on a's ENI.
func TestPlannedFailoverFencesTheOldOwnersLateRelease(t *testing.T) {
	r := newRig(t, 50*time.Millisecond)
	b, _ := r.executor(t, "b:4840", "eni-b", secret)
	ctx := context.Background()
	if err := r.exe.Apply(ctx, seize(3, "10s")); err != nil {
		t.Fatalf("a seizes: %v", err)
	}
	p := reassign(4)
	p.Intent.Self, p.Intent.Owner, p.Intent.From = "b:4840", "b:4840", "a:4840"
	if err := b.Apply(ctx, p); err != nil {
		t.Fatalf("b reassigns: %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "eni-b" {
		t.Fatalf("holder %q after the reassign, want eni-b", h)
	}
	if err := r.exe.Apply(ctx, release(3)); !errors.Is(err, floating.ErrStaleEpoch) {
		t.Fatalf("a's late release of epoch 3: %v", err)
	}
	if err := r.exe.Apply(ctx, reassign(3)); !errors.Is(err, floating.ErrStaleEpoch) {
		t.Fatalf("a's late reassign of epoch 3: %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "eni-b" {
		t.Fatalf("holder %q after a's late plans, want eni-b", h)
	}
	o, err := r.exe.Observe(ctx)
	if err != nil || o.Kind != floating.HolderMember || o.Member != "b:4840" {
		t.Fatalf("a observes %+v, %v", o, err)
	}
}

func TestDefaultEndpointIsTheRegionalOneOfItsPartition(t *testing.T) {
	eu, err := defaultEndpoint("eu-central-1")
	if err != nil {
		t.Fatal(err)
	}
	cn, err := defaultEndpoint("cn-north-1")
	if err != nil {
		t.Fatal(err)
	}
	euSuffix, ok1 := strings.CutPrefix(eu, "https://ec2.eu-central-1.")
	cnSuffix, ok2 := strings.CutPrefix(cn, "https://ec2.cn-north-1.")
	if !ok1 || !ok2 || euSuffix == "" || euSuffix == cnSuffix {
		t.Fatalf("endpoints %s and %s: want ec2.<region>.<suffix of each partition>", eu, cn)
	}
	if _, err := defaultEndpoint(""); err == nil {
		t.Fatal("an empty region resolved")
	}
}

// TestReleaseAfterTheAddressMovedAwayIsDone: between the release's read of
// its ENI and its unassign, the new owner reassigns the address; EC2
// answers InvalidParameterValue, the executor reads its ENI again and the
// release is done (the address is not this node's any more).
func TestReleaseAfterTheAddressMovedAwayIsDone(t *testing.T) {
	var r *rig
	r = newRigWith(t, awsfake.Options{BeforeAction: func(action string) {
		if action == "UnassignPrivateIpAddresses" {
			r.fake.Place("eni-b", floatIP)
		}
	}})
	r.fake.Place("eni-a", floatIP)
	if err := r.exe.Apply(context.Background(), release(4)); err != nil {
		t.Fatalf("release: %v", err)
	}
	if h := r.fake.Holder(floatIP); h != "eni-b" {
		t.Fatalf("holder %q, want eni-b (the new owner keeps it)", h)
	}
	if n := r.fake.Calls("DescribeNetworkInterfaces"); n != 2 {
		t.Fatalf("%d describes, want 2 (before the unassign and after its refusal)", n)
	}
}
