package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// apiVersion is the EC2 Query API version the calls are written against.
const apiVersion = "2016-11-15"

// EpochTag is the ENI tag that records the ownership epoch of the last
// plan that moved the address to or from the ENI.
const EpochTag = "otopcua-floating-epoch"

// APIError is an error answer of the EC2 API: its Code is the documented
// error code (PrivateIpAddressInUse, InvalidParameterValue, …).
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("ec2: %s (%d): %s", e.Code, e.Status, e.Message)
}

// ec2Client sends signed EC2 Query requests.
type ec2Client struct {
	endpoint string
	region   string
	creds    awssdk.CredentialsProvider
	http     *http.Client
	signer   *v4.Signer
	now      func() time.Time
}

// call posts the action with params and decodes the XML answer into out
// (nil: the answer is read and dropped).
func (c *ec2Client) call(ctx context.Context, action string, params url.Values, out any) error {
	params.Set("Action", action)
	params.Set("Version", apiVersion)
	body := params.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	creds, err := c.creds.Retrieve(ctx)
	if err != nil {
		return fmt.Errorf("ec2 credentials: %w", err)
	}
	sum := sha256.Sum256([]byte(body))
	if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "ec2", c.region, c.now()); err != nil {
		return fmt.Errorf("ec2 sign %s: %w", action, err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("ec2 %s: %w", action, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("ec2 %s: read answer: %w", action, err)
	}
	if resp.StatusCode/100 != 2 {
		return decodeError(resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := xml.Unmarshal(b, out); err != nil {
		return fmt.Errorf("ec2 %s: decode answer: %w", action, err)
	}
	return nil
}

func decodeError(status int, b []byte) error {
	var r struct {
		Errors []struct {
			Code    string `xml:"Code"`
			Message string `xml:"Message"`
		} `xml:"Errors>Error"`
	}
	if err := xml.Unmarshal(b, &r); err != nil || len(r.Errors) == 0 {
		return &APIError{Status: status, Code: "Unknown", Message: strings.TrimSpace(string(b))}
	}
	return &APIError{Status: status, Code: r.Errors[0].Code, Message: r.Errors[0].Message}
}

// eni is the part of a DescribeNetworkInterfaces item the executor reads.
type eni struct {
	ID        string `xml:"networkInterfaceId"`
	MAC       string `xml:"macAddress"`
	SubnetID  string `xml:"subnetId"`
	Addresses []struct {
		IP      string `xml:"privateIpAddress"`
		Primary bool   `xml:"primary"`
	} `xml:"privateIpAddressesSet>item"`
	Tags []struct {
		Key   string `xml:"key"`
		Value string `xml:"value"`
	} `xml:"tagSet>item"`
}

// epoch is the ENI's EpochTag (0: none or unreadable).
func (n eni) epoch() uint64 {
	for _, t := range n.Tags {
		if t.Key == EpochTag {
			v, _ := strconv.ParseUint(t.Value, 10, 64)
			return v
		}
	}
	return 0
}

// lists reports whether the ENI lists ip among its private addresses.
func (n eni) lists(ip string) bool {
	for _, a := range n.Addresses {
		if a.IP == ip {
			return true
		}
	}
	return false
}

// describeByID returns the ENI id.
func (c *ec2Client) describeByID(ctx context.Context, id string) (eni, error) {
	v := url.Values{"NetworkInterfaceId.1": {id}}
	enis, err := c.describe(ctx, v)
	if err != nil {
		return eni{}, err
	}
	if len(enis) != 1 {
		return eni{}, fmt.Errorf("ec2: DescribeNetworkInterfaces of %s returned %d interfaces", id, len(enis))
	}
	return enis[0], nil
}

// describeHolders returns the ENIs that list ip as a private address
// (at most one in a consistent VPC), limited to vpc when it is set.
func (c *ec2Client) describeHolders(ctx context.Context, ip, vpc string) ([]eni, error) {
	v := url.Values{
		"Filter.1.Name":    {"addresses.private-ip-address"},
		"Filter.1.Value.1": {ip},
	}
	if vpc != "" {
		v.Set("Filter.2.Name", "vpc-id")
		v.Set("Filter.2.Value.1", vpc)
	}
	return c.describe(ctx, v)
}

func (c *ec2Client) describe(ctx context.Context, v url.Values) ([]eni, error) {
	var all []eni
	for {
		var r struct {
			ENIs      []eni  `xml:"networkInterfaceSet>item"`
			NextToken string `xml:"nextToken"`
		}
		if err := c.call(ctx, "DescribeNetworkInterfaces", v, &r); err != nil {
			return nil, err
		}
		all = append(all, r.ENIs...)
		if r.NextToken == "" {
			return all, nil
		}
		v.Set("NextToken", r.NextToken)
	}
}

func (c *ec2Client) assign(ctx context.Context, id, ip string, allowReassignment bool) error {
	v := url.Values{
		"NetworkInterfaceId": {id},
		"PrivateIpAddress.1": {ip},
		"AllowReassignment":  {strconv.FormatBool(allowReassignment)},
	}
	return c.call(ctx, "AssignPrivateIpAddresses", v, nil)
}

func (c *ec2Client) unassign(ctx context.Context, id, ip string) error {
	v := url.Values{"NetworkInterfaceId": {id}, "PrivateIpAddress.1": {ip}}
	return c.call(ctx, "UnassignPrivateIpAddresses", v, nil)
}

// tagEpoch sets EpochTag to epoch on the ENIs ids.
func (c *ec2Client) tagEpoch(ctx context.Context, epoch uint64, ids ...string) error {
	v := url.Values{"Tag.1.Key": {EpochTag}, "Tag.1.Value": {strconv.FormatUint(epoch, 10)}}
	for i, id := range ids {
		v.Set("ResourceId."+strconv.Itoa(i+1), id)
	}
	return c.call(ctx, "CreateTags", v, nil)
}
