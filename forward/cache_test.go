package forward

import (
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
)

func key(h uint32) Key { return Key{Node: "b", Session: "s1", Handle: h, Nonce: 7} }

func TestCacheRemembersTheFirstResult(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := NewCache(10*time.Second, 4)
	if l, _ := c.Begin(key(1), t0); l != Unknown {
		t.Fatalf("first Begin: %v, want Unknown (begun)", l)
	}
	if l, _ := c.Begin(key(1), t0); l != Running {
		t.Fatalf("Begin while running: %v, want Running", l)
	}
	c.Finish(key(1), Response{Status: ua.StatusOK, Epoch: 3}, t0)
	l, r := c.Begin(key(1), t0.Add(9*time.Second))
	if l != Finished || r.Status != ua.StatusOK || r.Epoch != 3 {
		t.Fatalf("Begin after Finish: %v %+v, want Finished with the first result", l, r)
	}
	if l, _ := c.Peek(key(1), t0.Add(10*time.Second)); l != Unknown {
		t.Fatalf("Peek at the TTL: %v, want Unknown (expired)", l)
	}
	if c.Len() != 0 {
		t.Fatalf("Len after expiry %d, want 0", c.Len())
	}
}

func TestCacheBounds(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := NewCache(time.Minute, 2)
	c.Begin(key(1), t0)
	c.Begin(key(2), t0)
	if l, _ := c.Begin(key(3), t0); l != Full {
		t.Fatalf("Begin with every slot running: %v, want Full", l)
	}
	if l, _ := c.Peek(key(3), t0); l != Unknown {
		t.Fatalf("a Full Begin began %v", l)
	}
	c.Finish(key(2), Response{Status: ua.StatusBadTimeout}, t0)
	c.Finish(key(1), Response{Status: ua.StatusOK}, t0.Add(time.Second))
	if l, _ := c.Begin(key(3), t0.Add(2*time.Second)); l != Unknown {
		t.Fatalf("Begin with a finished slot: %v, want Unknown (begun)", l)
	}
	if c.Evicted != 1 {
		t.Fatalf("Evicted %d, want 1", c.Evicted)
	}
	if l, _ := c.Peek(key(2), t0.Add(2*time.Second)); l != Unknown {
		t.Fatalf("the oldest finished key is still %v, want evicted", l)
	}
	if l, r := c.Peek(key(1), t0.Add(2*time.Second)); l != Finished || r.Status != ua.StatusOK {
		t.Fatalf("the newer finished key: %v %v, want kept", l, r.Status)
	}
	if l, _ := c.Peek(key(3), t0.Add(2*time.Hour)); l != Running {
		t.Fatalf("a running key after any time: %v, want Running (never forgotten)", l)
	}
}

func TestCacheFinishOfUnbegunKeyPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Finish of a key never begun did not panic")
		}
	}()
	NewCache(time.Second, 1).Finish(key(9), Response{}, time.Unix(0, 0))
}
