package benchsrv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// The address space every implementation builds.
const (
	// NamespaceURI is the URI of namespace 1.
	NamespaceURI = "urn:otopcua:bench"
	// Namespace is the index the variables live in.
	Namespace = 1
	// FolderID is the numeric id (ns=1) of the folder under Objects.
	FolderID = 900
	// RoundsID is the numeric id (ns=1) of the Int64 counter of completed
	// update rounds.
	RoundsID = 999
	// FirstID is the numeric id (ns=1) of the first variable.
	FirstID = 1000
)

// Config describes the server to build.
type Config struct {
	// Items is the number of variables (at least 1).
	Items int
	// Addr is the host:port to listen on; port 0 picks a free port.
	Addr string
}

// Server is one implementation under test.
type Server interface {
	// URL is the endpoint URL clients dial.
	URL() string
	// UpdateAll sets every variable to a value derived from round, each with
	// a SourceTimestamp taken when it is set, and reports the change to the
	// server's subscription engine. It then sets the Rounds counter to round.
	// Called from one goroutine, never concurrently.
	UpdateAll(round int64)
	// Close stops the server.
	Close() error
}

// Impls lists the implementation names New accepts.
var Impls = []string{"gopcua", "otopcua"}

// ErrUnknownImpl is returned by New for a name not in Impls.
var ErrUnknownImpl = errors.New("benchsrv: unknown implementation")

// New builds and starts the implementation called impl.
func New(ctx context.Context, impl string, cfg Config) (Server, error) {
	if cfg.Items < 1 {
		return nil, fmt.Errorf("benchsrv: Items = %d, want at least 1", cfg.Items)
	}
	switch impl {
	case "gopcua":
		return newGopcua(ctx, cfg)
	case "otopcua":
		return newOtopcua(ctx, cfg)
	}
	return nil, fmt.Errorf("%w %q (accepted: %v)", ErrUnknownImpl, impl, Impls)
}

// valueOf is the value of variable k in round: Int64 at even k, Double at
// odd k, different in every round.
func valueOf(k int, round int64) any {
	if k%2 == 0 {
		return round*1000 + int64(k%1000)
	}
	return float64(round) + float64(k%1000)/1000
}

// freePort reserves a free TCP port on host by listening on it and closing
// the listener; used for servers whose listener does not report the port
// it bound. Another process could take the port in between; callers retry.
func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func splitAddr(addr string) (string, int, error) {
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("benchsrv: address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("benchsrv: address %q: bad port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return host, p, nil
}

// LoopStats describes how the update loop kept up.
type LoopStats struct {
	Rounds  int64         // rounds completed
	Late    int64         // rounds that took longer than the interval
	Busy    time.Duration // time spent inside UpdateAll
	Elapsed time.Duration // since Run started
}

// Run calls s.UpdateAll every interval until ctx is done. A round that
// overruns the interval is counted as late and the next one starts at
// once (ticks are not queued). It returns the loop's statistics.
func Run(ctx context.Context, s Server, interval time.Duration) LoopStats {
	var st LoopStats
	start := time.Now()
	next := start
	for {
		next = next.Add(interval)
		t0 := time.Now()
		st.Rounds++
		s.UpdateAll(st.Rounds)
		took := time.Since(t0)
		st.Busy += took
		if took > interval {
			st.Late++
		}
		wait := time.Until(next)
		if wait < 0 {
			next = time.Now() // skip, do not burst to catch up
			wait = 0
		}
		select {
		case <-ctx.Done():
			st.Elapsed = time.Since(start)
			return st
		case <-time.After(wait):
		}
	}
}
