package chaos

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"
)

func tenMinutes() PlanOptions {
	return PlanOptions{Clusters: 3, Duration: 10 * time.Minute, Kinds: AllKinds, Gap: [2]time.Duration{45 * time.Second, 60 * time.Second},
		First: [2]time.Duration{5 * time.Second, 25 * time.Second}, Tail: 40 * time.Second, RigShare: 0.12}
}

// TestDrawIsReproducible: one seed, one plan; another seed, another plan.
func TestDrawIsReproducible(t *testing.T) {
	o := tenMinutes()
	a, b := Draw(42, o), Draw(42, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed 42 drew two plans:\n%v\n%v", a, b)
	}
	if c := Draw(43, o); reflect.DeepEqual(a, c) {
		t.Fatalf("seeds 42 and 43 drew the same plan:\n%v", a)
	}
}

// TestDrawKeepsFaultsApart checks every plan of many seeds against the
// rules the checker relies on: within the schedule's end, at most one
// fault per ClusterId at a time and a gap of at least Gap[0] after each,
// a Config DB stop beside no other fault and followed by a gap on every
// ClusterId, only the kinds asked for; and over the seeds every kind
// drawn, on every ClusterId.
func TestDrawKeepsFaultsApart(t *testing.T) {
	for _, o := range []PlanOptions{tenMinutes(), func() PlanOptions {
		o := tenMinutes()
		o.Duration, o.Kinds = 90*time.Second, []Kind{Kill, Failover}
		o.Gap = [2]time.Duration{20 * time.Second, 25 * time.Second}
		return o
	}()} {
		seen := map[string]bool{}
		for seed := int64(1); seed <= 200; seed++ {
			plan := Draw(seed, o)
			if err := planOK(plan, o); err != nil {
				t.Fatalf("seed %d, kinds %v: %v\nplan:\n%s", seed, o.Kinds, err, planText(plan))
			}
			for _, f := range plan {
				seen[fmt.Sprint(f.Cluster, f.Kind)] = true
			}
		}
		for _, k := range o.Kinds {
			clusters := []int{0, 1, 2}
			if k == DBStop {
				clusters = []int{-1}
			}
			for _, c := range clusters {
				if !seen[fmt.Sprint(c, k)] {
					t.Errorf("kinds %v: no plan of 200 seeds has %s on cluster %d", o.Kinds, k, c)
				}
			}
		}
	}
}

func planOK(plan []Fault, o PlanOptions) error {
	end := o.Duration - o.Tail
	lastEnd := map[int]time.Duration{}
	var rigEnd time.Duration
	for i, f := range plan {
		if !slices.Contains(o.Kinds, f.Kind) {
			return fmt.Errorf("fault %d: kind %s not asked for", i, f.Kind)
		}
		if i > 0 && f.At < plan[i-1].At {
			return fmt.Errorf("fault %d: not sorted", i)
		}
		stop := f.At + f.Hold + allowance[f.Kind]
		if stop > end {
			return fmt.Errorf("fault %d (%s) ends at %v, after the schedule's end %v", i, f, stop, end)
		}
		if f.Kind == DBStop {
			for c, e := range lastEnd {
				if f.At < e+o.Gap[0] {
					return fmt.Errorf("fault %d (%s) starts %v after cluster %d's last fault ended, less than the gap", i, f, f.At-e, c)
				}
			}
			for c := range o.Clusters {
				lastEnd[c] = stop
			}
			rigEnd = stop
			continue
		}
		if f.Cluster < 0 || f.Cluster >= o.Clusters {
			return fmt.Errorf("fault %d: cluster %d", i, f.Cluster)
		}
		if e, ok := lastEnd[f.Cluster]; ok && f.At < e+o.Gap[0] {
			return fmt.Errorf("fault %d (%s) starts %v after its cluster's last fault ended, less than the gap", i, f, f.At-e)
		}
		if f.At < rigEnd+o.Gap[0] && rigEnd > 0 {
			return fmt.Errorf("fault %d (%s) starts %v after the Config DB stop ended", i, f, f.At-rigEnd)
		}
		if f.Kind == Failover && f.Target != Primary {
			return fmt.Errorf("fault %d: a manual failover aimed at the %s", i, f.Target)
		}
		lastEnd[f.Cluster] = stop
	}
	return nil
}

func TestParseKinds(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Kind
		err  bool
	}{
		{"", AllKinds, false},
		{"all", AllKinds, false},
		{"kill, stop-short,kill", []Kind{Kill, StopShort}, false},
		{"kill,explode", nil, true},
	} {
		got, err := ParseKinds(tc.in)
		if (err != nil) != tc.err || (!tc.err && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("ParseKinds(%q) = %v, %v; want %v (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
}
