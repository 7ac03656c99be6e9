package replication

import (
	"bytes"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/cluster/clustertls"
	"github.com/otopcua/otopcua/internal/poll"
	"github.com/otopcua/otopcua/internal/ports"
	"github.com/otopcua/otopcua/internal/testcert"
)

func tlsOptions(t *testing.T, ca *testcert.CA, name string, logs *logBuf) func(*Options) {
	t.Helper()
	cert, key := ca.Node(t, name)
	creds, err := clustertls.Load(clustertls.Files{CA: ca.File, Cert: cert, Key: key}, "LocalDb replication",
		slog.New(slog.NewTextHandler(logs, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return func(o *Options) { o.ServerCredentials, o.DialCredentials = creds.Server(), creds.Client() }
}

// TestReplicationOverMutualTLS: a pair with Cluster:Tls certificates of one
// CA replicates; a node whose certificate comes from another CA is refused
// by the TLS handshake on both sides (logged), and nothing reaches it.
func TestReplicationOverMutualTLS(t *testing.T) {
	p, err := ports.Free(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca, rogueCA := testcert.NewCA(t, "site ca"), testcert.NewCA(t, "rogue ca")
	a := &node{name: "node-a", path: filepath.Join(dir, "a.db"), listen: "127.0.0.1:" + strconv.Itoa(p[0])}
	b := &node{name: "node-b", path: filepath.Join(dir, "b.db"), listen: "127.0.0.1:" + strconv.Itoa(p[1])}
	x := &node{name: "node-x", path: filepath.Join(dir, "x.db"), listen: "127.0.0.1:" + strconv.Itoa(p[2])}
	tlsLogA, tlsLogX := &logBuf{}, &logBuf{}
	for _, n := range []*node{a, b, x} {
		n.open(t)
	}
	a.startWith(t, b.listen, testKey, tlsOptions(t, ca, "a", tlsLogA))
	b.startWith(t, a.listen, testKey, tlsOptions(t, ca, "b", &logBuf{}))
	x.startWith(t, a.listen, testKey, tlsOptions(t, rogueCA, "x", tlsLogX)) // the right key, the wrong CA

	doc := bytes.Repeat([]byte("deployment "), 1000)
	if err := a.db.SaveArtifact(ctxT(t), "site-a", 3, doc); err != nil {
		t.Fatal(err)
	}
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		got, err := b.db.LoadArtifact(ctxT(t), "site-a")
		if err != nil || got.Version != 3 || !bytes.Equal(got.Doc, doc) {
			return fmt.Errorf("B holds version %d, %v", got.Version, err)
		}
		return nil
	})
	poll.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if !strings.Contains(tlsLogA.String(), clustertls.LogRefused) {
			return fmt.Errorf("A has not logged the refused handshake:\n%s", tlsLogA.String())
		}
		if !strings.Contains(tlsLogX.String(), clustertls.LogFailed) {
			return fmt.Errorf("X has not logged its failed handshake:\n%s", tlsLogX.String())
		}
		return nil
	})
	if got, err := x.db.LoadArtifact(ctxT(t), "site-a"); err == nil && got.Version != 0 {
		t.Fatalf("the node with the other CA received version %d", got.Version)
	}
}
