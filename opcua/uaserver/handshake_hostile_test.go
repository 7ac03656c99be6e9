package uaserver

import (
	"crypto/rand"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gopcua/opcua/ua"
	"github.com/gopcua/opcua/uacp"
)

// startGuardedServer is a test server offering every secured endpoint,
// with setup applied after.
func startGuardedServer(t *testing.T, setup func(*Config)) *testServer {
	t.Helper()
	testKeys(t)
	return startServer(t, func(c *Config) {
		secure(securedEndpointSet...)(c)
		if setup != nil {
			setup(c)
		}
	})
}

// sendOpen connects from ip, says Hello and sends the OPN chunk opn as
// raw bytes; it returns the answer's type ("OPNF" or "ERRF"), the ERR's
// status and the connection (for renewals).
func sendOpen(t *testing.T, ts *testServer, ip string, opn []byte) (string, ua.StatusCode, *wireClient) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	c, err := d.Dial("tcp", ts.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	w := &wireClient{t: t, c: c}
	if err := writeUACP(c, "HELF", &uacp.Hello{ReceiveBufSize: 65535, SendBufSize: 65535}); err != nil {
		t.Fatal(err)
	}
	if kind, _ := w.frame(); kind != "ACKF" {
		t.Fatalf("got %s, want ACKF", kind)
	}
	return w.sendOpen(opn)
}

func (w *wireClient) sendOpen(opn []byte) (string, ua.StatusCode, *wireClient) {
	w.t.Helper()
	if _, err := w.c.Write(opn); err != nil {
		w.t.Fatal(err)
	}
	kind, b := w.frame()
	if kind != "ERRF" {
		return kind, ua.StatusOK, w
	}
	var e uacp.Error
	if _, err := e.Decode(b[8:]); err != nil {
		w.t.Fatal(err)
	}
	return kind, ua.StatusCode(e.ErrorCode), w
}

func nonce32() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return b
}

// issue is a fresh Basic256Sha256 SignAndEncrypt Issue request.
func issue(t *testing.T, nonce []byte) []byte {
	return sealedOpen(t, openSpec{policy: ua.SecurityPolicyURIBasic256Sha256, mode: ua.MessageSecurityModeSignAndEncrypt,
		typ: ua.SecurityTokenRequestTypeIssue, seq: 1, nonce: nonce})
}

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// logLines counts the INFO (or higher) lines of msg about client ip.
func logLines(ts *testServer, msg, ip string) int {
	n := 0
	for _, l := range strings.Split(ts.logs.String(), "\n") {
		if strings.Contains(l, `"msg":"`+msg+`"`) && strings.Contains(l, `"remote":"`+ip+`:`) && !strings.Contains(l, `"level":"DEBUG"`) {
			n++
		}
	}
	return n
}

// TestReplayedOpenSecureChannelIsRefused: one captured secured
// OpenSecureChannel, byte for byte, on 200 new connections from one
// address (eight at a time, raw bytes, as the probe sent them): the first
// opens a channel, the 199 others, sent at the probe's 489 a second, are
// answered ERR BadNonceInvalid before any private-key operation, the
// process (client included) uses less than one core during the run, and the refusals write one line of each kind, not 400.
func TestReplayedOpenSecureChannelIsRefused(t *testing.T) {
	ts := startGuardedServer(t, nil)
	opn := issue(t, nonce32())
	if kind, code, _ := sendOpen(t, ts, "127.0.0.2", opn); kind != "OPNF" {
		t.Fatalf("the first OpenSecureChannel got %s %v, want OPNF", kind, code)
	}

	// The probe's rate: 489 handshakes a second from one address.
	const conns, parallel, rate = 199, 8, 489
	cpu0, wall0 := cpuTime(t), time.Now()
	var mu sync.Mutex
	codes := map[ua.StatusCode]int{}
	var wg sync.WaitGroup
	next := make(chan struct{})
	go func() {
		defer close(next)
		tick := time.NewTicker(time.Second / rate)
		defer tick.Stop()
		for range conns {
			<-tick.C
			next <- struct{}{}
		}
	}()
	for range parallel {
		wg.Go(func() {
			for range next {
				kind, code, w := sendOpen(t, ts, "127.0.0.2", opn)
				_ = w.c.Close()
				if kind == "OPNF" {
					code = ua.StatusGood
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	t.Logf("%d replays in %s: %s of CPU (%.2f cores, %.0f refusals/s), answers %v",
		conns, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), cpu.Seconds()/wall.Seconds(), conns/wall.Seconds(), codes)
	if codes[ua.StatusBadNonceInvalid] != conns {
		t.Fatalf("answers %v, want %d × BadNonceInvalid", codes, conns)
	}
	if got := ts.Stats().Refusals[LimitReplayedOpenSecureChannel]; got != conns {
		t.Fatalf("%s counted %d, want %d", LimitReplayedOpenSecureChannel, got, conns)
	}
	if cpu >= wall {
		t.Fatalf("the run used %s of CPU in %s of wall time: one core or more", cpu, wall)
	}
	if n := logLines(ts, "uaserver: OpenSecureChannel refused", "127.0.0.2"); n != 1 {
		t.Errorf("%d refusal lines for %d refusals within a minute, want 1", n, conns)
	}
	if n := logLines(ts, "uaserver: channel closed", "127.0.0.2"); n > 1 {
		t.Errorf("%d channel-closed lines for %d channels within a minute, want at most 1", n, conns)
	}
}

// TestReusedClientNonceIsRefused: the same client nonce in a request
// encrypted anew (other bytes) is refused after the decryption, before
// the server signs an answer.
func TestReusedClientNonceIsRefused(t *testing.T) {
	ts := startGuardedServer(t, nil)
	n := nonce32()
	if kind, code, _ := sendOpen(t, ts, "127.0.0.5", issue(t, n)); kind != "OPNF" {
		t.Fatalf("first: %s %v, want OPNF", kind, code)
	}
	if kind, code, _ := sendOpen(t, ts, "127.0.0.5", issue(t, n)); kind != "ERRF" || code != ua.StatusBadNonceInvalid {
		t.Fatalf("same nonce, new bytes: %s %v, want ERRF BadNonceInvalid", kind, code)
	}
	if kind, code, _ := sendOpen(t, ts, "127.0.0.5", issue(t, nonce32())); kind != "OPNF" {
		t.Fatalf("a fresh nonce: %s %v, want OPNF", kind, code)
	}
}

// TestSecuredOpensAreRateLimitedPerAddress: beyond
// MaxSecureChannelOpensPerAddress a second, fresh and valid requests from
// one address are answered ERR BadTcpServerTooBusy, counted, and logged
// once; another address opens at once.
func TestSecuredOpensAreRateLimitedPerAddress(t *testing.T) {
	const rate = 2
	ts := startGuardedServer(t, func(c *Config) { c.MaxSecureChannelOpensPerAddress = rate })
	opened, busy := 0, 0
	start := time.Now()
	for range 10 {
		kind, code, w := sendOpen(t, ts, "127.0.0.3", issue(t, nonce32()))
		_ = w.c.Close()
		switch {
		case kind == "OPNF":
			opened++
		case code == ua.StatusBadTCPServerTooBusy:
			busy++
		default:
			t.Fatalf("got %s %v", kind, code)
		}
	}
	elapsed := time.Since(start)
	t.Logf("10 opens in %s from one address: %d opened, %d BadTcpServerTooBusy", elapsed.Round(time.Millisecond), opened, busy)
	if max := rate + int(elapsed.Seconds()*rate) + 1; opened < rate || opened > max {
		t.Fatalf("%d opened in %s, want between %d and %d", opened, elapsed, rate, max)
	}
	if got := ts.Stats().Refusals[LimitSecureChannelOpensPerAddress]; got != uint64(busy) || busy == 0 {
		t.Fatalf("%d refused, %s counted %d", busy, LimitSecureChannelOpensPerAddress, got)
	}
	if kind, code, _ := sendOpen(t, ts, "127.0.0.1", issue(t, nonce32())); kind != "OPNF" {
		t.Fatalf("another address: %s %v, want OPNF at once", kind, code)
	}
	if n := logLines(ts, "uaserver: OpenSecureChannel refused", "127.0.0.3"); n != 1 {
		t.Errorf("%d refusal lines for %d refusals, want 1", n, busy)
	}
}

// channelOf returns the id of the one open channel of client ip.
func channelOf(t *testing.T, ts *testServer, ip string) uint32 {
	t.Helper()
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, ch := range ts.channels {
		if ch.addr == ip {
			return ch.id
		}
	}
	t.Fatalf("no channel of %s", ip)
	return 0
}

// TestRenewStormIsThrottled: a client renewing its token as fast as it
// can gets at most MaxTokenRenewalsPerAddress renewals a second (plus the
// burst), then its channel is closed with ERR BadTcpServerTooBusy.
func TestRenewStormIsThrottled(t *testing.T) {
	const rate = 5
	ts := startGuardedServer(t, func(c *Config) { c.MaxTokenRenewalsPerAddress = rate })
	kind, code, w := sendOpen(t, ts, "127.0.0.4", issue(t, nonce32()))
	if kind != "OPNF" {
		t.Fatalf("open: %s %v", kind, code)
	}
	scID := channelOf(t, ts, "127.0.0.4")
	renewed := 0
	start := time.Now()
	for seq := uint32(2); seq < 200; seq++ {
		opn := sealedOpen(t, openSpec{policy: ua.SecurityPolicyURIBasic256Sha256, mode: ua.MessageSecurityModeSignAndEncrypt,
			typ: ua.SecurityTokenRequestTypeRenew, scID: scID, seq: seq, nonce: nonce32()})
		kind, code, _ = w.sendOpen(opn)
		if kind != "OPNF" {
			break
		}
		renewed++
	}
	elapsed := time.Since(start)
	t.Logf("renew storm: %d renewals answered in %s, then %s %v", renewed, elapsed.Round(time.Millisecond), kind, code)
	if kind != "ERRF" || code != ua.StatusBadTCPServerTooBusy {
		t.Fatalf("the storm ended with %s %v, want ERRF BadTcpServerTooBusy", kind, code)
	}
	if max := rate + int(elapsed.Seconds()*rate) + 1; renewed < rate || renewed > max {
		t.Fatalf("%d renewals in %s, want between %d and %d", renewed, elapsed, rate, max)
	}
	st := ts.Stats()
	if st.Refusals[LimitTokenRenewalsPerAddress] != 1 || st.TokenRenewals != uint64(renewed) {
		t.Fatalf("counted %d refusals and %d renewals, want 1 and %d", st.Refusals[LimitTokenRenewalsPerAddress], st.TokenRenewals, renewed)
	}
}
