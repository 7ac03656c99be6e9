package azure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/otopcua/otopcua/floating"
)

// apiVersion is the Microsoft.Network API version the calls are written
// against.
const apiVersion = "2024-05-01"

// armClient reads and writes the resource group's NICs.
type armClient struct {
	pipeline runtime.Pipeline
	// base is …/subscriptions/{s}/resourceGroups/{g}/providers/Microsoft.Network/networkInterfaces.
	base string
}

func (c *armClient) url(name string) string {
	u := c.base
	if name != "" {
		u += "/" + url.PathEscape(name)
	}
	return u + "?api-version=" + apiVersion
}

func (c *armClient) get(ctx context.Context, name string) (nic, error) {
	var n nic
	return n, c.do(ctx, http.MethodGet, c.url(name), "", nil, &n)
}

// put writes n back under If-Match of its ETag and returns the NIC as ARM
// answered.
func (c *armClient) put(ctx context.Context, n nic) (nic, error) {
	var out nic
	return out, c.do(ctx, http.MethodPut, c.url(n.name()), n.etag(), n, &out)
}

// list returns every NIC of the resource group.
func (c *armClient) list(ctx context.Context) ([]nic, error) {
	var all []nic
	for u := c.url(""); u != ""; {
		var page struct {
			Value    []nic  `json:"value"`
			NextLink string `json:"nextLink"`
		}
		if err := c.do(ctx, http.MethodGet, u, "", nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Value...)
		u = page.NextLink
	}
	return all, nil
}

func (c *armClient) do(ctx context.Context, method, u, ifMatch string, in, out any) error {
	req, err := runtime.NewRequest(ctx, method, u)
	if err != nil {
		return err
	}
	if ifMatch != "" {
		req.Raw().Header.Set("If-Match", ifMatch)
	}
	if in != nil {
		if err := runtime.MarshalAsJSON(req, in); err != nil {
			return err
		}
	}
	resp, err := c.pipeline.Do(req)
	if err != nil {
		return err
	}
	if !runtime.HasStatusCode(resp, http.StatusOK, http.StatusCreated) {
		return conflictOr(runtime.NewResponseError(resp))
	}
	return runtime.UnmarshalAsJSON(resp, out)
}

// conflictOr wraps floating.ErrConflict around ARM's answers that mean
// "someone changed it meanwhile": 412 and PrivateIPAddressInUse.
func conflictOr(err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) && (re.StatusCode == http.StatusPreconditionFailed || re.ErrorCode == "PrivateIPAddressInUse") {
		return fmt.Errorf("%w: %w", floating.ErrConflict, err)
	}
	return err
}
