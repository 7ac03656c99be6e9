package actors_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/otopcua/otopcua/actors"
)

// recorder is a MessageInvoker that records what the mailbox hands it.
type recorder struct{ got []string }

func (r *recorder) InvokeSystemMessage(m any) { r.got = append(r.got, fmt.Sprintf("sys %v", m)) }
func (r *recorder) InvokeUserMessage(m any)   { r.got = append(r.got, fmt.Sprintf("user %v", m)) }
func (r *recorder) EscalateFailure(any, any)  {}

// inline runs the mailbox on the caller's goroutine.
type inline struct{}

func (inline) Schedule(fn func()) { fn() }
func (inline) Throughput() int    { return 300 }

// TestRemoteMailboxHoldsPostsDuringSpawn: protoactor's own mailbox, posted
// to before its handlers are registered (what a remote message does in the
// middle of SpawnNamed), panics; RemoteMailbox holds the messages and hands
// them on in order, user messages after the Started system message.
func TestRemoteMailboxHoldsPostsDuringSpawn(t *testing.T) {
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("protoactor's default mailbox accepted a post before RegisterHandlers; RemoteMailbox may no longer be needed")
			}
		}()
		actor.Unbounded()().PostUserMessage("early")
	}()

	mb := actors.RemoteMailbox()()
	mb.PostUserMessage("u1")
	mb.PostSystemMessage("s1")
	r := &recorder{}
	mb.RegisterHandlers(r, inline{})
	mb.PostUserMessage("u2")
	mb.PostSystemMessage("started")
	if n := mb.UserMessageCount(); n != 2 {
		t.Fatalf("UserMessageCount before Start = %d, want the 2 held", n)
	}
	mb.Start()
	mb.PostUserMessage("u3")
	want := []string{"sys s1", "sys started", "user u1", "user u2", "user u3"}
	if !slices.Equal(r.got, want) {
		t.Fatalf("delivered %q, want %q", r.got, want)
	}
}
