package rig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is one process of the rig: a node, a simulator or Prometheus.
type proc struct {
	name string
	argv []string
	env  []string // added to the environment (OTOPCUA_ variables of the test's own are dropped)
	dir  string
	t    *testing.T

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	log  string
}

func startProc(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, argv: argv, env: env, dir: t.TempDir(), t: t}
	p.start()
	t.Cleanup(p.cleanup)
	return p
}

func (p *proc) start() {
	p.t.Helper()
	p.log = filepath.Join(p.dir, fmt.Sprintf("%s-%d.log", p.name, time.Now().UnixNano()))
	f, err := os.Create(p.log)
	if err != nil {
		p.t.Fatal(err)
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.dir
	cmd.Env = append(cleanEnviron(), p.env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("%s: %v", p.name, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(done)
	}()
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	p.mu.Unlock()
}

func (p *proc) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("%s did not exit after SIGKILL", p.name)
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	path := p.log
	p.mu.Unlock()
	b, _ := os.ReadFile(path)
	return string(b)
}

func (p *proc) cleanup() {
	if p.alive() {
		p.kill()
	}
	if p.t.Failed() {
		out := p.output()
		if len(out) > 20000 {
			out = "…" + out[len(out)-20000:]
		}
		p.t.Logf("--- log of %s ---\n%s", p.name, out)
	}
}
