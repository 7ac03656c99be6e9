package forward

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
)

// Key identifies one client request across every attempt to forward it:
// the sending node, the client's session on it, the request's handle in
// that session, and the sending process's nonce (drawn once per process,
// so that a restarted node whose sessions and handles start again cannot
// collide with its previous incarnation's keys still remembered by the
// Primary).
type Key struct {
	Node    string
	Session string
	Handle  uint32
	Nonce   uint64
	// Op tells apart the operations of one request (the index of a
	// WriteValue in a Write, of a method in a Call).
	Op uint32
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%016x/%s/%d.%d", k.Node, k.Nonce, k.Session, k.Handle, k.Op)
}

// NewNonce draws a process nonce from the operating system's random
// source.
func NewNonce() uint64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("forward: the operating system's random source failed: " + err.Error())
	}
	return binary.LittleEndian.Uint64(b[:])
}
