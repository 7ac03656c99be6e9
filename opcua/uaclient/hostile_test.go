package uaclient

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
	"github.com/gopcua/opcua/uasc"
)

// hostileServer accepts one connection, opens a secure channel properly,
// then answers the first request with reply(requestID).
func hostileServer(t *testing.T, reply func(reqID uint32) []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ul, err := uacp.Listen(ctx, "opc.tcp://"+addr, &uacp.Acknowledge{ReceiveBufSize: 0xffff, SendBufSize: 0xffff})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go func() {
		c, err := ul.Accept(ctx)
		if err != nil {
			return
		}
		defer c.Close()
		opn, err := c.Receive()
		if err != nil {
			return
		}
		// OPN: header 12, then the asymmetric security header, then the
		// sequence header whose second word is the request id.
		var ash uasc.AsymmetricSecurityHeader
		n, err := ash.Decode(opn[12:])
		if err != nil {
			return
		}
		reqID := binary.LittleEndian.Uint32(opn[12+n+4:])
		m := &uasc.Message{
			MessageHeader: &uasc.MessageHeader{
				Header:                   uasc.NewHeader(uasc.MessageTypeOpenSecureChannel, uasc.ChunkTypeFinal, 7),
				AsymmetricSecurityHeader: uasc.NewAsymmetricSecurityHeader(ua.SecurityPolicyURINone, nil, nil),
				SequenceHeader:           uasc.NewSequenceHeader(1, reqID),
			},
			TypeID: ua.NewFourByteExpandedNodeID(0, id.OpenSecureChannelResponse_Encoding_DefaultBinary),
			Service: &ua.OpenSecureChannelResponse{
				ResponseHeader: &ua.ResponseHeader{Timestamp: time.Now(), ServiceDiagnostics: &ua.DiagnosticInfo{}, StringTable: []string{}, AdditionalHeader: ua.NewExtensionObject(nil)},
				SecurityToken:  &ua.ChannelSecurityToken{ChannelID: 7, TokenID: 1, CreatedAt: time.Now(), RevisedLifetime: 3600000},
				ServerNonce:    []byte{},
			},
		}
		b, err := m.Encode()
		if err != nil {
			return
		}
		if _, err := c.Write(b); err != nil {
			return
		}
		req, err := c.Receive()
		if err != nil {
			return
		}
		body := reply(binary.LittleEndian.Uint32(req[12+4+4:]))
		chunk := make([]byte, 24, 24+len(body))
		copy(chunk, "MSGF")
		binary.LittleEndian.PutUint32(chunk[4:], uint32(24+len(body)))
		binary.LittleEndian.PutUint32(chunk[8:], 7)
		binary.LittleEndian.PutUint32(chunk[12:], 1)
		binary.LittleEndian.PutUint32(chunk[16:], 2)
		binary.LittleEndian.PutUint32(chunk[20:], binary.LittleEndian.Uint32(req[12+4+4:]))
		_, _ = c.Write(append(chunk, body...))
		<-ctx.Done()
	}()
	return "opc.tcp://" + addr
}

// A server that claims two billion results in a 40-byte ReadResponse
// gets an error, not an allocation of gigabytes by gopcua's decoder.
func TestCallRefusesHostileArrayCountsBeforeDecoding(t *testing.T) {
	url := hostileServer(t, func(uint32) []byte {
		hdr, err := ua.Encode(&ua.ResponseHeader{Timestamp: time.Now(), ServiceDiagnostics: &ua.DiagnosticInfo{}, StringTable: []string{}, AdditionalHeader: ua.NewExtensionObject(nil)})
		if err != nil {
			t.Error(err)
		}
		typ := []byte{0x01, 0x00, 0, 0}
		binary.LittleEndian.PutUint16(typ[2:], id.ReadResponse_Encoding_DefaultBinary)
		b := append(typ, hdr...)
		return binary.LittleEndian.AppendUint32(b, 0x7fffffff) // Results: 2^31−1 DataValues, none present
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ch, err := Dial(ctx, url, Options{DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ch.Close()
	_, err = ch.Call(ctx, &ua.ReadRequest{NodesToRead: []*ua.ReadValueID{{NodeID: ua.NewNumericNodeID(0, id.Server_ServiceLevel), AttributeID: ua.AttributeIDValue}}}, nil, 3*time.Second)
	if err == nil || !strings.Contains(err.Error(), "refused before decoding") || !errors.Is(err, ua.StatusBadDecodingError) {
		t.Fatalf("Call: %v, want the wire check's refusal", err)
	}
}
