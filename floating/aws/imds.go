package aws

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// tokenTTL is the lifetime asked for an IMDSv2 session token, in seconds.
const tokenTTL = "60"

// imdsClient reads instance metadata with IMDSv2 session tokens.
type imdsClient struct {
	endpoint string
	http     *http.Client
}

// localIPv4s returns the addresses instance metadata lists on the
// interface with the MAC address mac.
func (c *imdsClient) localIPv4s(ctx context.Context, mac string) ([]string, error) {
	token, err := c.token(ctx)
	if err != nil {
		return nil, err
	}
	path := "/latest/meta-data/network/interfaces/macs/" + strings.ToLower(mac) + "/local-ipv4s"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-aws-ec2-metadata-token", token)
	b, err := c.do(req)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func (c *imdsClient) token(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, c.endpoint+"/latest/api/token", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", tokenTTL)
	b, err := c.do(req)
	if err != nil {
		return "", fmt.Errorf("metadata token: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func (c *imdsClient) do(req *http.Request) ([]byte, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metadata %s %s: %s", req.Method, req.URL.Path, resp.Status)
	}
	return b, nil
}
