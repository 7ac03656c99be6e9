package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/oracle/oci-go-sdk/v65/common"

	"github.com/otopcua/otopcua/floating"
)

// EpochTag is the freeform tag of the private IP object that records the
// ownership epoch of the last plan that moved it.
const EpochTag = "otopcua-floating-epoch"

// ServiceError is an error answer of the API: Code is the documented
// code (Conflict, NoEtagMatch, NotAuthorizedOrNotFound, …).
type ServiceError struct {
	Status        int
	Code, Message string
}

func (e *ServiceError) Error() string {
	return fmt.Sprintf("oci: %s (%d): %s", e.Code, e.Status, e.Message)
}

// privateIP is the part of a PrivateIp the executor reads and writes.
type privateIP struct {
	ID           string            `json:"id,omitempty"`
	VnicID       string            `json:"vnicId,omitempty"`
	SubnetID     string            `json:"subnetId,omitempty"`
	IPAddress    string            `json:"ipAddress,omitempty"`
	IsPrimary    bool              `json:"isPrimary,omitempty"`
	FreeformTags map[string]string `json:"freeformTags,omitempty"`
}

// epoch is the object's EpochTag (0: none).
func (p privateIP) epoch() uint64 {
	v, _ := strconv.ParseUint(p.FreeformTags[EpochTag], 10, 64)
	return v
}

// withEpoch returns p's tags with EpochTag set to epoch.
func (p privateIP) withEpoch(epoch uint64) map[string]string {
	tags := map[string]string{}
	for k, v := range p.FreeformTags {
		tags[k] = v
	}
	tags[EpochTag] = strconv.FormatUint(epoch, 10)
	return tags
}

// client sends signed requests to the Core Services API.
type client struct {
	endpoint string
	signer   common.HTTPRequestSigner
	http     *http.Client
	now      func() time.Time
}

const base = "/20160918/privateIps"

// list is ListPrivateIps with the query q, every page.
func (c *client) list(ctx context.Context, q url.Values) ([]privateIP, error) {
	var all []privateIP
	for {
		var page []privateIP
		h, err := c.do(ctx, http.MethodGet, base+"?"+q.Encode(), "", nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := h.Get("opc-next-page")
		if next == "" {
			return all, nil
		}
		q.Set("page", next)
	}
}

func (c *client) get(ctx context.Context, id string) (privateIP, string, error) {
	var p privateIP
	h, err := c.do(ctx, http.MethodGet, base+"/"+url.PathEscape(id), "", nil, &p)
	return p, h.Get("ETag"), err
}

// subnetOf is the subnet of the VNIC vnic (GetVnic).
func (c *client) subnetOf(ctx context.Context, vnic string) (string, error) {
	var v struct {
		SubnetID string `json:"subnetId"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/20160918/vnics/"+url.PathEscape(vnic), "", nil, &v); err != nil {
		return "", err
	}
	if v.SubnetID == "" {
		return "", fmt.Errorf("oci: VNIC %s names no subnet", vnic)
	}
	return v.SubnetID, nil
}

func (c *client) create(ctx context.Context, p privateIP) error {
	_, err := c.do(ctx, http.MethodPost, base, "", p, nil)
	return err
}

func (c *client) update(ctx context.Context, id, etag string, p privateIP) error {
	_, err := c.do(ctx, http.MethodPut, base+"/"+url.PathEscape(id), etag, p, nil)
	return err
}

func (c *client) delete(ctx context.Context, id, etag string) error {
	_, err := c.do(ctx, http.MethodDelete, base+"/"+url.PathEscape(id), etag, nil, nil)
	return err
}

// do sends one signed request; a 412 wraps floating.ErrConflict.
func (c *client) do(ctx context.Context, method, path, ifMatch string, in, out any) (http.Header, error) {
	var body io.Reader = http.NoBody
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.endpoint+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Date", c.now().UTC().Format(http.TimeFormat))
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	if err := c.signer.Sign(req); err != nil {
		return nil, fmt.Errorf("oci sign: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("oci %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("oci %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return resp.Header, decodeError(resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("oci %s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

func decodeError(status int, b []byte) error {
	e := &ServiceError{Status: status}
	if err := json.Unmarshal(b, e); err != nil || e.Code == "" {
		e.Code, e.Message = "Unknown", string(b)
	}
	if status == http.StatusPreconditionFailed {
		return fmt.Errorf("%w: %w", floating.ErrConflict, e)
	}
	return e
}

// UnmarshalJSON reads the API's {"code","message"} error body.
func (e *ServiceError) UnmarshalJSON(b []byte) error {
	var w struct{ Code, Message string }
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.Code, e.Message = w.Code, w.Message
	return nil
}

func isStatus(err error, status int) bool {
	var se *ServiceError
	return errors.As(err, &se) && se.Status == status
}
