package hoconcompat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/otopcua/otopcua/config"
)

// ExplicitKeys reports which of JSONKeys an appsettings.json file (data,
// nil for none) or the environment (os.Environ() form) sets, as
// config.Load reads them: keys case-insensitive, "Cluster:StableAfter" or
// "cluster.stableafter" flat keys equal to the nested form, comments and
// trailing commas accepted, OTOPCUA_<SECTION>__<KEY> variables (a list
// element OTOPCUA_CLUSTER__SEEDNODES__0 sets the list) and OTOPCUA_ROLES.
//
// A JSON null sets Cluster:SelfFormAfter (it disables self-forming) but
// not the other keys: config.Load keeps their defaults, and null
// Cluster:DownOnConnectionRefused means "the strategy's default".
func ExplicitKeys(data []byte, environ []string) (map[string]bool, error) {
	leaves := map[string]any{} // lower-case dotted path → value (nil for JSON null)
	if data != nil {
		var tree any
		dec := json.NewDecoder(bytes.NewReader(stripJSONC(data)))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return nil, fmt.Errorf("reading the JSON keys: %w", err)
		}
		collectLeaves(tree, "", leaves)
	}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		switch {
		case !ok:
		case name == config.EnvRoles:
			leaves["cluster.roles"] = val
		case strings.HasPrefix(name, config.EnvPrefix):
			parts := strings.Split(strings.ToLower(strings.TrimPrefix(name, config.EnvPrefix)), "__")
			if len(parts) >= 2 {
				leaves[strings.Join(parts, ".")] = val
			}
		}
	}
	explicit := map[string]bool{}
	for _, key := range JSONKeys {
		lk := strings.ToLower(strings.ReplaceAll(key, ":", "."))
		for path, val := range leaves {
			if path != lk && !strings.HasPrefix(path, lk+".") {
				continue
			}
			if val == nil && path == lk && key != KeySelfFormAfter {
				continue
			}
			explicit[key] = true
		}
	}
	return explicit, nil
}

// collectLeaves records every non-object value of a decoded JSON tree under
// its lower-case path, splitting keys at ':' and '.'.
func collectLeaves(v any, path string, out map[string]any) {
	obj, ok := v.(map[string]any)
	if !ok {
		if path != "" {
			out[path] = v
		}
		return
	}
	for k, child := range obj {
		p := path
		for _, seg := range strings.FieldsFunc(k, func(r rune) bool { return r == ':' || r == '.' }) {
			if p != "" {
				p += "."
			}
			p += strings.ToLower(seg)
		}
		collectLeaves(child, p, out)
	}
}

// stripJSONC removes // and /* */ comments and trailing commas outside
// strings, keeping line breaks.
func stripJSONC(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j+1, len(b))
			out = append(out, b[i:end]...)
			i = end - 1
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/') {
				if b[i] == '\n' {
					out = append(out, '\n')
				}
				i++
			}
			i++ // at the '/' (or past the end)
			out = append(out, ' ')
		case c == ',':
			if next := nextSignificant(b, i+1); next == '}' || next == ']' {
				continue
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// nextSignificant returns the next byte after whitespace and comments, 0 at
// the end.
func nextSignificant(b []byte, i int) byte {
	for i < len(b) {
		switch {
		case b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n':
			i++
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/') {
				i++
			}
			i += 2
		default:
			return b[i]
		}
	}
	return 0
}
