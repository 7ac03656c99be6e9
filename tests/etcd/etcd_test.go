package etcd

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func rangeOK(t *testing.T, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v3/kv/range", strings.NewReader(`{"key":"eA=="}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// TestStartKillRestart: three members answer; a killed member's client
// port refuses connections while the other two still answer; it answers
// again after Restart.
func TestStartKillRestart(t *testing.T) {
	c := Start(t, 3)
	for _, m := range c.Members {
		if err := rangeOK(t, m.ClientURL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
	}
	m := c.Members[1]
	m.Kill()
	if conn, err := net.DialTimeout("tcp", strings.TrimPrefix(m.ClientURL, "http://"), time.Second); err == nil {
		conn.Close()
		t.Fatalf("%s still accepts connections after Kill", m.Name)
	}
	for _, o := range []*Member{c.Members[0], c.Members[2]} {
		if err := rangeOK(t, o.ClientURL); err != nil {
			t.Fatalf("%s with %s dead: %v", o.Name, m.Name, err)
		}
	}
	m.Restart()
	if err := rangeOK(t, m.ClientURL); err != nil {
		t.Fatalf("%s after Restart: %v", m.Name, err)
	}
}
