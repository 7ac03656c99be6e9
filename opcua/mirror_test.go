package opcua

import (
	"strings"
	"testing"

	"github.com/gopcua/opcua/id"
	"github.com/gopcua/opcua/ua"

	"github.com/otopcua/otopcua/opcua/mirror"
)

// dropTransport loses every batch; the tests here check the wiring of a
// Member, not its traffic.
type dropTransport struct{}

func (dropTransport) Send(string, []byte) error { return nil }

func newMember(t *testing.T) *mirror.Member {
	t.Helper()
	m := mirror.New(mirror.Options{Self: "127.0.0.1:4053#1", Transport: dropTransport{}})
	t.Cleanup(m.Close)
	return m
}

// TestClientReadsHotAndMirrored: a client reading
// Server.ServerRedundancy.RedundancySupport over opc.tcp of a server with a
// mirror gets HotAndMirrored (5).
func TestClientReadsHotAndMirrored(t *testing.T) {
	_, c := startServer(t, Config{
		PeerApplicationURIs: []string{peerBURI},
		RedundancySupport:   ua.RedundancySupportHotAndMirrored,
		Mirror:              newMember(t),
	})
	if got := clientRead(t, c, id.Server_ServerRedundancy_RedundancySupport)[0].Value.Value(); got != int32(ua.RedundancySupportHotAndMirrored) {
		t.Fatalf("RedundancySupport = %#v, want int32 5 (HotAndMirrored)", got)
	}
}

func TestMirrorAndRedundancySupportGoTogether(t *testing.T) {
	for _, tc := range []struct {
		name    string
		support ua.RedundancySupport
		mirror  bool
		want    string // "" accepted
	}{
		{"mirrored with a member", ua.RedundancySupportHotAndMirrored, true, ""},
		{"mirrored without a member", ua.RedundancySupportHotAndMirrored, false, "HotAndMirrored needs Config.Mirror"},
		{"a member under Hot", ua.RedundancySupportHot, true, "Config.Mirror is set but Config.RedundancySupport is RedundancySupportHot"},
		{"a member under the default", ua.RedundancySupportNone, true, ""},
		{"a member under Warm", ua.RedundancySupportWarm, true, "want HotAndMirrored (5)"},
		{"transparent", ua.RedundancySupportTransparent, false, "want Warm (2), Hot (3) or HotAndMirrored (5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{ListenHost: "127.0.0.1", Port: AnyPort, RedundancySupport: tc.support}
			if tc.mirror {
				cfg.Mirror = newMember(t)
			}
			s, err := New(cfg)
			if s != nil {
				t.Cleanup(func() { _ = s.Close() })
				if got := readNode(t, s, nsid(id.Server_ServerRedundancy_RedundancySupport)); tc.mirror && got != int32(ua.RedundancySupportHotAndMirrored) {
					t.Errorf("RedundancySupport with a member = %#v, want int32 5", got)
				}
			}
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
