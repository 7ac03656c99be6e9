package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The tree decoded here is koanf's merged map: lower-case keys, nested
// map[string]any sections, JSON scalar types (or strings from the
// environment), lists as []any, a comma-separated string, or a map keyed by
// element index.
//
// Struct fields are matched by their Go name, which is the appsettings.json
// key. A field tagged `null:"zero"` is set to its zero value by JSON null;
// null on any other key keeps the default.

var durationType = reflect.TypeOf(time.Duration(0))

// acceptedOverride gives a field-specific text when a value has the wrong type.
var acceptedOverride = map[string]string{
	"Cluster:Port": acceptPort,
	"OpcUa:Port":   acceptPort,
	"Http:Port":    acceptHTTPPort,
}

// decoder walks the merged tree into a Config, collecting one Item per key
// that is unknown or has a value of the wrong type.
type decoder struct {
	// names maps a lower-case path to the key as written in the file, so
	// that an unknown key is reported with the user's spelling.
	names map[string]string
	items problems
}

func (d *decoder) section(raw map[string]any, dst reflect.Value, key, path string) {
	t := dst.Type()
	known := make(map[string]bool, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		lower := strings.ToLower(f.Name)
		known[lower] = true
		v, ok := raw[lower]
		if !ok {
			continue
		}
		d.field(f, dst.Field(i), v, joinKey(key, f.Name), joinPath(path, lower))
	}
	for _, k := range sortedKeys(raw) {
		if !known[k] {
			kpath := joinPath(path, k)
			shown, ok := d.names[kpath]
			if !ok {
				shown = joinKey(key, k)
			}
			d.items.add(shown, display(raw[k]), unknownKey(key, t, k))
		}
	}
}

func (d *decoder) field(f reflect.StructField, dst reflect.Value, v any, key, path string) {
	if v == nil {
		if f.Tag.Get("null") == "zero" {
			dst.Set(reflect.Zero(f.Type))
		}
		return
	}
	if f.Type.Kind() == reflect.Struct {
		m, ok := v.(map[string]any)
		if !ok {
			d.items.add(key, display(v), "accepted values are sections (JSON objects) with keys "+fieldNames(f.Type))
			return
		}
		d.section(m, dst, key, path)
		return
	}
	if accepted := decodeLeaf(v, dst); accepted != "" {
		if o, ok := acceptedOverride[key]; ok {
			accepted = o
		}
		d.items.add(key, display(v), accepted)
	}
}

// decodeLeaf stores v in dst and returns "" or, when v does not fit, the
// accepted-values text.
func decodeLeaf(v any, dst reflect.Value) string {
	t := dst.Type()
	switch {
	case t == durationType:
		s, ok := v.(string)
		if !ok {
			return "accepted values are " + DurationFormat
		}
		dur, err := ParseDuration(s)
		if err != nil {
			return "accepted values are " + DurationFormat
		}
		dst.SetInt(int64(dur))
	case t.Kind() == reflect.String:
		s, ok := scalarString(v)
		if !ok {
			return "accepted values are text"
		}
		dst.SetString(strings.TrimSpace(s))
	case t.Kind() == reflect.Int:
		n, ok := toInt(v)
		if !ok {
			return "accepted values are whole numbers"
		}
		dst.SetInt(n)
	case t.Kind() == reflect.Bool:
		b, ok := toBool(v)
		if !ok {
			return "accepted values are true or false"
		}
		dst.SetBool(b)
	case t.Kind() == reflect.Float64:
		x, ok := toFloat(v)
		if !ok {
			return "accepted values are numbers"
		}
		dst.SetFloat(x)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String:
		list, ok := toStringList(v)
		if !ok {
			return `accepted values are lists of text: ["a", "b"], or "a,b" in an environment variable`
		}
		dst.Set(reflect.ValueOf(list))
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Bool:
		b, ok := toBool(v)
		if !ok {
			return "accepted values are true, false or null"
		}
		dst.Set(reflect.ValueOf(&b))
	default:
		panic(fmt.Sprintf("config: invariant broken: field type %s has no decoder", t))
	}
	return ""
}

func scalarString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(strings.TrimSpace(x), 10, 32)
		return n, err == nil
	}
	return 0, false
}

func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true":
			return true, true
		case "false":
			return false, true
		}
	}
	return false, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil
	}
	return 0, false
}

// toStringList accepts a JSON list of scalars, a map keyed by element index
// ("0", "1", … as .NET and OTOPCUA_X__Y__0 variables write lists) or a
// comma-separated string. Empty entries of a comma list are dropped.
func toStringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := scalarString(e)
			if !ok {
				return nil, false
			}
			out = append(out, strings.TrimSpace(s))
		}
		return out, true
	case map[string]any:
		list, ok := overlayList(nil, x)
		if !ok {
			return nil, false
		}
		return toStringList(list)
	case string:
		out := []string{}
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		return out, true
	}
	return nil, false
}

// overlayList applies an index-keyed map to a list: element i of list is
// replaced by idx["i"], indexes past the end are appended in order. It
// reports false when a key of idx is not an index.
func overlayList(list []any, idx map[string]any) ([]any, bool) {
	byIndex := make(map[int]any, len(list)+len(idx))
	for i, v := range list {
		byIndex[i] = v
	}
	for k, v := range idx {
		n, ok := digits(k, 1, 6)
		if !ok {
			return nil, false
		}
		byIndex[int(n)] = v
	}
	order := make([]int, 0, len(byIndex))
	for i := range byIndex {
		order = append(order, i)
	}
	sort.Ints(order)
	out := make([]any, 0, len(order))
	for _, i := range order {
		out = append(out, byIndex[i])
	}
	return out, true
}

// display renders a raw value for an Item.
func display(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case float64, bool:
		s, _ := scalarString(x)
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func unknownKey(section string, t reflect.Type, k string) string {
	what, where := "key", "keys in "+section
	if section == "" {
		what, where = "section", "sections"
	}
	hint := ""
	if s := closest(t, k); s != "" {
		hint = " (did you mean " + joinKey(section, s) + "?)"
	}
	return "unknown " + what + hint + "; accepted " + where + " are " + fieldNames(t)
}

// closest returns the field name nearest to k (edit distance ≤ 2, or one a
// prefix of the other), or "".
func closest(t reflect.Type, k string) string {
	best, bestDist := "", 3
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Name
		lower := strings.ToLower(name)
		d := editDistance(lower, k)
		if len(k) >= 4 && (strings.HasPrefix(lower, k) || strings.HasPrefix(k, lower)) && d > 2 {
			d = 2
		}
		if d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return math.MaxInt32
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func fieldNames(t reflect.Type) string {
	names := make([]string, t.NumField())
	for i := range names {
		names[i] = t.Field(i).Name
	}
	return strings.Join(names, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinKey(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + ":" + name
}

func joinPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

// toTree renders a Config as the lower-case tree koanf holds, so that the
// defaults are the first koanf layer.
func toTree(v reflect.Value) map[string]any {
	t := v.Type()
	out := make(map[string]any, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		name := strings.ToLower(f.Name)
		switch {
		case f.Type == durationType:
			out[name] = time.Duration(fv.Int()).String()
		case f.Type.Kind() == reflect.Struct:
			out[name] = toTree(fv)
		case f.Type.Kind() == reflect.String:
			out[name] = fv.String()
		case f.Type.Kind() == reflect.Int:
			out[name] = float64(fv.Int())
		case f.Type.Kind() == reflect.Float64:
			out[name] = fv.Float()
		case f.Type.Kind() == reflect.Bool:
			out[name] = fv.Bool()
		case f.Type.Kind() == reflect.Slice:
			list := make([]any, fv.Len())
			for j := range list {
				list[j] = fv.Index(j).String()
			}
			out[name] = list
		case f.Type.Kind() == reflect.Pointer:
			if !fv.IsNil() {
				out[name] = fv.Elem().Bool()
			}
		default:
			panic(fmt.Sprintf("config: invariant broken: field %s of type %s has no tree form", f.Name, f.Type))
		}
	}
	return out
}
