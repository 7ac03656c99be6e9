package leaseetcd

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
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

	"github.com/otopcua/otopcua/cluster/lease"
	"github.com/otopcua/otopcua/tests/etcd"
	"github.com/otopcua/otopcua/tests/netem"
	"github.com/otopcua/otopcua/tests/procs"
)

// store is the three etcd members of a drill, wherever they run: their
// client URLs, an HTTP client that reaches them, and per-member kill and
// liveness.
type store struct {
	t         *testing.T
	endpoints []string
	client    *http.Client
	kill      func(i int)
	running   func(i int) bool
	logTail   func(i int) string
}

// loopbackStore starts three etcd-server members on 127.0.0.1 (tests/etcd).
func loopbackStore(t *testing.T) *store {
	c := etcd.Start(t, 3)
	return &store{t: t, endpoints: c.Endpoints(), client: &http.Client{Timeout: 2 * time.Second},
		kill:    func(i int) { c.Members[i].Kill() },
		running: func(i int) bool { return c.Members[i].Running() },
		logTail: func(i int) string { return c.Members[i].LogTail() }}
}

// post sends a v3 JSON gateway request to endpoint i.
func (s *store) post(i int, path, body string, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoints[i]+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: HTTP %d: %s", s.endpoints[i], path, resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

// leader is the index of the etcd leader, as the first running member that
// answers its status says.
func (s *store) leader() (int, error) {
	var last error = fmt.Errorf("no running member")
	for i := range s.endpoints {
		if !s.running(i) {
			continue
		}
		var st struct {
			Header struct {
				MemberID string `json:"member_id"`
			} `json:"header"`
			Leader string `json:"leader"`
		}
		if err := s.post(i, "/v3/maintenance/status", "{}", &st); err != nil {
			last = err
			continue
		}
		if st.Leader == "" || st.Leader == "0" {
			last = fmt.Errorf("%s: no leader", s.endpoints[i])
			continue
		}
		// Find the leader's index: the member whose own status names it.
		for j := range s.endpoints {
			if !s.running(j) {
				continue
			}
			var sj struct {
				Header struct {
					MemberID string `json:"member_id"`
				} `json:"header"`
			}
			if err := s.post(j, "/v3/maintenance/status", "{}", &sj); err == nil && sj.Header.MemberID == st.Leader {
				return j, nil
			}
		}
		last = fmt.Errorf("leader %s is no running member", st.Leader)
	}
	return -1, last
}

// waitLeader waits until the running members have a leader and returns
// its index.
func (s *store) waitLeader(total time.Duration) int {
	s.t.Helper()
	var l int
	procs.CheckFor(s.t, total, 50*time.Millisecond, func() error {
		var err error
		l, err = s.leader()
		return err
	})
	return l
}

// holder reads the lease key of clusterID with a linearizable read on the
// running members (tried in turn): "" when the lease is free.
func (s *store) holder(clusterID string) (string, error) {
	key := base64.StdEncoding.EncodeToString([]byte(lease.EtcdKeyPrefix + clusterID))
	var last error = fmt.Errorf("no running member")
	for i := range s.endpoints {
		if !s.running(i) {
			continue
		}
		var rr struct {
			Kvs []struct {
				Value []byte `json:"value"`
			} `json:"kvs"`
		}
		if err := s.post(i, "/v3/kv/range", `{"key":"`+key+`"}`, &rr); err != nil {
			last = err
			continue
		}
		if len(rr.Kvs) == 0 {
			return "", nil
		}
		var v struct {
			Holder string `json:"holder"`
		}
		if err := json.Unmarshal(rr.Kvs[0].Value, &v); err != nil {
			return "", fmt.Errorf("lease key value %q: %v", rr.Kvs[0].Value, err)
		}
		return v.Holder, nil
	}
	return "", last
}

// killMember SIGKILLs member i and checks that two are left running.
func (s *store) killMember(i int) time.Time {
	s.t.Helper()
	at := time.Now()
	s.kill(i)
	if s.running(i) {
		s.t.Fatalf("etcd member %d still running after its kill", i)
	}
	n := 0
	for j := range s.endpoints {
		if s.running(j) {
			n++
		}
	}
	if n != 2 {
		s.t.Fatalf("%d etcd members running after the kill, want 2", n)
	}
	return at
}

// ordered returns the endpoints with endpoint first at the front: the
// nodes try that member first (cluster/lease tries them in turn, starting
// with the last that answered).
func (s *store) ordered(first int) []string {
	out := []string{s.endpoints[first]}
	for i, e := range s.endpoints {
		if i != first {
			out = append(out, e)
		}
	}
	return out
}

// nsMember is one etcd-server process inside a test host's namespace.
type nsMember struct {
	name, clientURL, peerURL, dataDir, logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// hostStore starts three etcd-server members inside test host h (ip
// netns exec), listening on h's address (ports 2379/2380, 2479/2480,
// 2579/2580 of that namespace): every other test host reaches them over
// the test network. tests/etcd cannot do this: it starts members on
// 127.0.0.1 of the test process's namespace only.
func hostStore(t *testing.T, h *netem.Host) *store {
	bin, err := etcd.Binary()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	var ms []*nsMember
	var initial []string
	for i := 0; i < 3; i++ {
		m := &nsMember{
			name:      "m" + strconv.Itoa(i),
			clientURL: fmt.Sprintf("http://%s:%d", h.Addr, 2379+100*i),
			peerURL:   fmt.Sprintf("http://%s:%d", h.Addr, 2380+100*i),
			dataDir:   filepath.Join(root, "m"+strconv.Itoa(i)),
			logPath:   filepath.Join(root, "m"+strconv.Itoa(i)+".log"),
		}
		initial = append(initial, m.name+"="+m.peerURL)
		ms = append(ms, m)
	}
	for _, m := range ms {
		if err := m.start(bin, h, strings.Join(initial, ",")); err != nil {
			t.Fatalf("etcd in %s: start %s: %v", h.Name, m.name, err)
		}
	}
	t.Cleanup(func() {
		for _, m := range ms {
			m.kill()
		}
	})
	s := &store{t: t, client: h.HTTPClient(),
		kill: func(i int) { ms[i].kill() },
		running: func(i int) bool {
			ms[i].mu.Lock()
			defer ms[i].mu.Unlock()
			select {
			case <-ms[i].exited:
				return false
			default:
				return true
			}
		},
		logTail: func(i int) string {
			b, _ := os.ReadFile(ms[i].logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			return string(b)
		}}
	for _, m := range ms {
		s.endpoints = append(s.endpoints, m.clientURL)
	}
	for i := range ms {
		procs.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
			if !s.running(i) {
				t.Fatalf("etcd %s exited during start-up\n%s", ms[i].name, s.logTail(i))
			}
			return s.post(i, "/v3/kv/range", `{"key":"aGVhbHRo"}`, nil)
		})
	}
	return s
}

func (m *nsMember) start(bin string, h *netem.Host, initial string) error {
	logf, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	argv := append(h.Wrap(), bin,
		"--name", m.name,
		"--data-dir", m.dataDir,
		"--listen-client-urls", m.clientURL,
		"--advertise-client-urls", m.clientURL,
		"--listen-peer-urls", m.peerURL,
		"--initial-advertise-peer-urls", m.peerURL,
		"--initial-cluster", initial,
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "otopcua-leaseetcd",
		"--log-level", "warn",
		"--logger", "zap",
	)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}
	if v, ok := os.LookupEnv("ETCD_UNSUPPORTED_ARCH"); ok {
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

// kill ends the member with SIGKILL (ip netns exec execs etcd, so the
// process group is etcd's) and waits until it has exited.
func (m *nsMember) kill() {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-exited
}
