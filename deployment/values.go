package deployment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
)

// maxNameLen is the longest device, tag or alarm name.
const maxNameLen = 64

// validName: 1–64 of A-Z a-z 0-9 _ - .
func validName(s string) bool {
	return len(s) <= maxNameLen && validClusterID(s)
}

// validClusterID: one or more of A-Z a-z 0-9 _ - . (config's Node:ClusterId
// rule).
func validClusterID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

func isNameByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// validHostPort: host:port with a host name or IP address and a port
// 1..65535 written in digits.
func validHostPort(s string) bool {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" || port == "" || len(port) > 5 {
		return false
	}
	for i := 0; i < len(port); i++ {
		if port[i] < '0' || port[i] > '9' {
			return false
		}
	}
	if n, _ := strconv.Atoi(port); n < 1 || n > 65535 {
		return false
	}
	return net.ParseIP(host) != nil || validHostName(host)
}

// validHostName: labels of letters, digits, '-' and '_' separated by dots,
// at most 253 characters.
func validHostName(h string) bool {
	if len(h) > 253 || h[0] == '.' || h[0] == '-' || h[len(h)-1] == '.' {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !isNameByte(c) || c == '.' && h[i-1] == '.' {
			return false
		}
	}
	return true
}

// render is a Go value as the JSON text a document would hold; "" for an
// absent value.
func render(value any) string {
	switch x := value.(type) {
	case string:
		if x == "" {
			return ""
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(x) // a string always encodes
		return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	case *int:
		if x == nil {
			return ""
		}
		return strconv.Itoa(*x)
	case int:
		return strconv.Itoa(x)
	case *float64:
		if x == nil {
			return ""
		}
		return formatFloat(*x)
	case Duration:
		if x == 0 {
			return ""
		}
		return strconv.Quote(x.String())
	case bool:
		return strconv.FormatBool(x)
	case []Alarm: // too long to show
		return fmt.Sprintf("[… %d alarms]", len(x))
	case []Tag:
		return fmt.Sprintf("[… %d tags]", len(x))
	case []Device:
		return fmt.Sprintf("[… %d devices]", len(x))
	}
	panic(fmt.Sprintf("deployment: invariant broken: no rendering for %T", value))
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
