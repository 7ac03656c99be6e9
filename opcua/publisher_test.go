package opcua

import (
	"slices"
	"sync"
	"testing"
)

// recorder is a ServiceLevelPublisher that remembers what it got.
type recorder struct {
	mu  sync.Mutex
	got []byte
}

func (r *recorder) Publish(level byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, level)
}

func (r *recorder) levels() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func TestNullServiceLevelPublisherDrops(t *testing.T) {
	var p ServiceLevelPublisher = NullServiceLevelPublisher{}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := 0; l < 256; l++ {
				p.Publish(byte(l))
			}
		}()
	}
	wg.Wait()
	// A deferred publisher bound to the null one forwards into nothing and
	// keeps working.
	var d DeferredServiceLevelPublisher
	d.Bind(NullServiceLevelPublisher{})
	d.Publish(7)
	if l, ok := d.Latest(); !ok || l != 7 {
		t.Errorf("Latest = %d, %v", l, ok)
	}
}

func TestDeferredServiceLevelPublisher(t *testing.T) {
	type step struct {
		publish int // -1: none
		bind    int // index into targets, -1: none, -2: Bind(nil)
	}
	pub := func(l int) step { return step{publish: l, bind: -1} }
	bind := func(k int) step { return step{publish: -1, bind: k} }
	for _, c := range []struct {
		name  string
		steps []step
		want  [2][]byte // what targets 0 and 1 received
	}{
		{"bind before any level forwards nothing yet", []step{bind(0)}, [2][]byte{nil, nil}},
		{"levels before bind: only the latest is handed over", []step{pub(255), pub(100), pub(240), bind(0)}, [2][]byte{{240}, nil}},
		{"after bind every level is forwarded", []step{pub(0), bind(0), pub(200), pub(250)}, [2][]byte{{0, 200, 250}, nil}},
		{"first level 0 is published (never lingers)", []step{bind(0), pub(0)}, [2][]byte{{0}, nil}},
		{"rebind hands the latest to the new target", []step{bind(0), pub(240), bind(1), pub(250)}, [2][]byte{{240}, {240, 250}}},
		{"bind nil buffers again", []step{bind(0), pub(240), bind(-2), pub(100), pub(200), bind(1)}, [2][]byte{{240}, {200}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d DeferredServiceLevelPublisher
			targets := [2]*recorder{{}, {}}
			for _, s := range c.steps {
				if s.publish >= 0 {
					d.Publish(byte(s.publish))
				}
				switch {
				case s.bind >= 0:
					d.Bind(targets[s.bind])
				case s.bind == -2:
					d.Bind(nil)
				}
			}
			for k, r := range targets {
				if got := r.levels(); !slices.Equal(got, c.want[k]) {
					t.Errorf("target %d got %v, want %v", k, got, c.want[k])
				}
			}
		})
	}
}

// TestDeferredPublisherOrderUnderRace binds while another goroutine
// publishes an increasing sequence: the target must see an increasing
// sequence that ends with the last level, whatever the interleaving.
func TestDeferredPublisherOrderUnderRace(t *testing.T) {
	for round := 0; round < 50; round++ {
		var d DeferredServiceLevelPublisher
		r := &recorder{}
		start := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			for l := 1; l <= 200; l++ {
				d.Publish(byte(l))
			}
		}()
		go func() {
			defer wg.Done()
			<-start
			d.Bind(r)
		}()
		close(start)
		wg.Wait()
		got := r.levels()
		if len(got) == 0 || got[len(got)-1] != 200 {
			t.Fatalf("round %d: target got %v, want it to end with 200", round, got)
		}
		for k := 1; k < len(got); k++ {
			if got[k] <= got[k-1] {
				t.Fatalf("round %d: level %d after %d: %v", round, got[k], got[k-1], got)
			}
		}
	}
}

func TestServerServiceLevelPublisher(t *testing.T) {
	s := newTestServer(t, Config{})
	var d DeferredServiceLevelPublisher
	d.Publish(100) // before the server is bound
	if got := s.ServiceLevel(); got != InitialServiceLevel {
		t.Fatalf("ServiceLevel before Bind = %d, want %d", got, InitialServiceLevel)
	}
	d.Bind(NewServerServiceLevelPublisher(s))
	if got := s.ServiceLevel(); got != 100 {
		t.Errorf("ServiceLevel after Bind = %d, want the buffered 100", got)
	}
	d.Publish(250)
	if got := readNode(t, s, serviceLevelID); got != byte(250) {
		t.Errorf("Server.ServiceLevel node = %v, want 250", got)
	}
}
