// Package etcd starts real etcd-server processes on loopback for tests: a
// cluster of n members, each with its own data directory in the test's
// temporary directory, and Kill/Restart per member.
//
// It needs the etcd binary (Debian package etcd-server; scripts/test.sh
// installs it when run as root). Without it Start FAILS the test, naming the
// package: it never skips.
package etcd

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds a member's start (and the cluster's first election).
const startTimeout = 60 * time.Second

// Cluster is n etcd members on 127.0.0.1 owned by a test.
type Cluster struct {
	t       testing.TB
	bin     string
	Members []*Member
}

// Member is one etcd-server process.
type Member struct {
	c          *Cluster
	Name       string
	ClientURL  string // http://127.0.0.1:port
	PeerURL    string
	dataDir    string
	logPath    string
	initialCfg string

	mu     sync.Mutex // guards cmd, exited
	cmd    *exec.Cmd
	exited chan struct{}
}

// Binary finds the etcd executable: $OTOPCUA_ETCD, else etcd on PATH.
func Binary() (string, error) {
	if p := os.Getenv("OTOPCUA_ETCD"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", fmt.Errorf("etcd: the etcd binary is not on PATH: install the Debian package etcd-server " +
			"(apt-get install etcd-server; scripts/test.sh installs it when run as root)")
	}
	return p, nil
}

// Start starts an n-member cluster on free loopback ports, waits until
// every member answers a linearizable read and registers a cleanup that
// kills them all.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin}
	root := t.TempDir()
	ports := freePorts(t, 2*n)
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			c:         c,
			Name:      "m" + strconv.Itoa(i),
			ClientURL: "http://127.0.0.1:" + strconv.Itoa(ports[2*i]),
			PeerURL:   "http://127.0.0.1:" + strconv.Itoa(ports[2*i+1]),
			dataDir:   filepath.Join(root, "m"+strconv.Itoa(i)),
			logPath:   filepath.Join(root, "m"+strconv.Itoa(i)+".log"),
		}
		initial = append(initial, m.Name+"="+m.PeerURL)
		c.Members = append(c.Members, m)
	}
	for _, m := range c.Members {
		m.initialCfg = strings.Join(initial, ",")
		if err := m.start(); err != nil {
			t.Fatalf("etcd: start %s: %v", m.Name, err)
		}
	}
	t.Cleanup(func() {
		for _, m := range c.Members {
			m.kill()
		}
	})
	for _, m := range c.Members {
		if err := m.waitHealthy(startTimeout); err != nil {
			t.Fatalf("etcd: %s: %v\n%s", m.Name, err, m.LogTail())
		}
	}
	return c
}

// Endpoints are the members' client URLs.
func (c *Cluster) Endpoints() []string {
	out := make([]string, len(c.Members))
	for i, m := range c.Members {
		out[i] = m.ClientURL
	}
	return out
}

func (m *Member) start() error {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(m.c.bin,
		"--name", m.Name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.ClientURL,
		"--advertise-client-urls", m.ClientURL,
		"--listen-peer-urls", m.PeerURL,
		"--initial-advertise-peer-urls", m.PeerURL,
		"--initial-cluster", m.initialCfg,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "otopcua-test",
		"--log-level", "warn",
		"--logger", "zap",
	)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if v, ok := os.LookupEnv("ETCD_UNSUPPORTED_ARCH"); ok { // etcd refuses some architectures without it
		cmd.Env = append(cmd.Env, "ETCD_UNSUPPORTED_ARCH="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	go func() { _ = cmd.Wait(); close(exited) }()
	return nil
}

// Running reports whether the member's process is alive.
func (m *Member) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exited == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// Kill ends the member with SIGKILL and waits until it has exited: its
// client port then refuses connections.
func (m *Member) Kill() {
	m.c.t.Helper()
	if !m.Running() {
		m.c.t.Fatalf("etcd: Kill %s: not running", m.Name)
	}
	m.kill()
}

func (m *Member) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}

// Restart starts a killed member again on its data directory and ports and
// waits until it answers.
func (m *Member) Restart() {
	m.c.t.Helper()
	if m.Running() {
		m.c.t.Fatalf("etcd: Restart %s: already running", m.Name)
	}
	if err := m.start(); err != nil {
		m.c.t.Fatalf("etcd: restart %s: %v", m.Name, err)
	}
	if err := m.waitHealthy(startTimeout); err != nil {
		m.c.t.Fatalf("etcd: %s: %v\n%s", m.Name, err, m.LogTail())
	}
}

// waitHealthy waits until the member answers a linearizable range over its
// v3 JSON gateway (it needs a leader for that).
func (m *Member) waitHealthy(d time.Duration) error {
	deadline := time.Now().Add(d)
	var last error
	for time.Now().Before(deadline) {
		if !m.Running() {
			return fmt.Errorf("exited during start-up")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, m.ClientURL+"/v3/kv/range",
			strings.NewReader(`{"key":"aGVhbHRo"}`))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				resp.Body.Close()
				cancel()
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
			resp.Body.Close()
		}
		cancel()
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not healthy within %v: %v", d, last)
}

// LogTail is the end of the member's log.
func (m *Member) LogTail() string {
	b, err := os.ReadFile(m.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// freePorts picks n distinct free loopback ports (held open together so
// they differ).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	out := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("etcd: pick a free port: %v", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}
