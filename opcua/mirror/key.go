package mirror

import (
	"strconv"

	"github.com/gopcua/opcua/ua"
)

// sessionKey is id.String(): the key of a session here, on the peers and
// in the subscription engine (uaserver.SessionIDOf). The hooks of every
// Publish compute it; gopcua formats it with fmt.Sprintf, which boxes its
// arguments, so the numeric ids every session gets are formatted here
// with strconv (one allocation, the string) and any other kind of id is
// left to String.
func sessionKey(id *ua.NodeID) string {
	if id == nil {
		return ""
	}
	switch id.Type() {
	case ua.NodeIDTypeTwoByte, ua.NodeIDTypeFourByte, ua.NodeIDTypeNumeric:
	default:
		return id.String()
	}
	var b [32]byte
	out := b[:0]
	if ns := id.Namespace(); ns != 0 && id.Type() != ua.NodeIDTypeTwoByte {
		out = append(out, "ns="...)
		out = strconv.AppendUint(out, uint64(ns), 10)
		out = append(out, ';')
	}
	out = append(out, "i="...)
	out = strconv.AppendUint(out, uint64(id.IntID()), 10)
	return string(out)
}
