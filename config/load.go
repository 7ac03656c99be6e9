package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment override: OTOPCUA_<SECTION>__<KEY>.
const EnvPrefix = "OTOPCUA_"

// EnvRoles overrides Cluster:Roles with a comma list, e.g. "admin,driver".
// It wins over OTOPCUA_CLUSTER__ROLES when both are set.
const EnvRoles = "OTOPCUA_ROLES"

// hostname is os.Hostname, replaceable in tests.
var hostname = os.Hostname

// Load reads one node's configuration in layers, each overriding the one
// before:
//
//  1. the defaults (see the field comments of Config);
//  2. the JSON file at path, skipped when path is "" (comments and trailing
//     commas are accepted as in .NET; keys are case-insensitive; "OpcUa:Port"
//     or "opcua.port" written as one flat key equals the nested form);
//  3. environ (os.Environ() form; nil means none): OTOPCUA_<SECTION>__<KEY>,
//     nesting with "__" (OTOPCUA_CLUSTER__FAILUREDETECTOR__THRESHOLD). A list
//     is either a comma list that replaces it (OTOPCUA_CLUSTER__SEEDNODES=a,b)
//     or one element by index that replaces only that element
//     (OTOPCUA_CLUSTER__SEEDNODES__0=a), as .NET does; OTOPCUA_ROLES replaces
//     Cluster:Roles. OTOPCUA_ variables naming no known section are ignored.
//
// It then fills in derived defaults and validates. A file that is not valid
// JSON gives a *SyntaxError naming the file, line and column; invalid
// settings give one *ValidationError listing every problem (unknown keys,
// wrong types and invalid values).
func Load(path string, environ []string) (*Config, error) {
	if path == "" {
		return load("", nil, environ)
	}
	data, err := file.Provider(path).ReadBytes()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return load(path, data, environ)
}

// LoadBytes is Load for file contents already in memory. name appears in
// error messages and its directory resolves a relative AkkaConfigPath; data
// nil means no file.
func LoadBytes(name string, data []byte, environ []string) (*Config, error) {
	return load(name, data, environ)
}

func load(name string, data []byte, environ []string) (*Config, error) {
	ko := koanf.NewWithConf(koanf.Conf{Delim: "."})
	merge := koanf.WithMergeFunc(mergeLayer)
	if err := ko.Load(confmap.Provider(toTree(reflect.ValueOf(staticDefaults()).Elem()), ""), nil, merge); err != nil {
		return nil, fmt.Errorf("config: defaults: %w", err)
	}
	names := map[string]string{}
	if data != nil {
		shown := name
		if shown == "" {
			shown = "<config>"
		}
		if err := ko.Load(bytesProvider(data), &jsonParser{file: shown, names: names}, merge); err != nil {
			return nil, err
		}
	}
	ev := envReader{sources: map[string]string{}}
	if err := ko.Load(env.Provider(".", env.Opt{Prefix: EnvPrefix, TransformFunc: ev.transform, EnvironFunc: func() []string { return environ }}), nil, merge); err != nil {
		return nil, fmt.Errorf("config: environment: %w", err)
	}
	if roles, ok := lookupEnv(environ, EnvRoles); ok {
		ev.sources["cluster.roles"] = EnvRoles
		layer := map[string]any{"cluster": map[string]any{"roles": roles}}
		if err := ko.Load(confmap.Provider(layer, ""), nil, merge); err != nil {
			return nil, fmt.Errorf("config: %s: %w", EnvRoles, err)
		}
	}

	d := decoder{names: names}
	d.items = append(d.items, ev.items...)
	cfg := staticDefaults()
	d.section(ko.Raw(), reflect.ValueOf(cfg).Elem(), "", "")
	baseDir := ""
	if name != "" {
		baseDir = filepath.Dir(name)
	}
	cfg.resolve(baseDir)
	items := d.items
	var ve *ValidationError
	if err := cfg.Validate(); errors.As(err, &ve) {
		items = append(items, ve.Items...)
	}
	if len(items) == 0 {
		return cfg, nil
	}
	for i := range items {
		if items[i].Source == "" {
			items[i].Source = ev.sourceFor(items[i].Key)
		}
	}
	return nil, &ValidationError{File: name, Items: items}
}

// resolve normalises spelling and fills in the derived defaults.
func (c *Config) resolve(baseDir string) {
	cl := &c.Cluster
	cl.SplitBrainResolverStrategy = strings.ToLower(cl.SplitBrainResolverStrategy)
	cl.Roles = normaliseRoles(cl.Roles)
	if cl.PublicHostname == "" {
		if h, err := hostname(); err == nil && h != "" {
			cl.PublicHostname = h
		} else {
			cl.PublicHostname = "localhost"
		}
	}
	selfValid := checkHost(cl.PublicHostname) == nil && cl.Port >= 1 && cl.Port <= 65535
	if len(cl.SeedNodes) == 0 && len(c.OpcUa.PeerApplicationUris) == 0 && selfValid {
		cl.SeedNodes = []string{cl.NodeID()} // a lone node is its own seed
	}
	if cl.SelfFormAfter < 0 {
		cl.SelfFormAfter = 0
	}
	cl.Lease.Provider = strings.ToLower(strings.TrimSpace(cl.Lease.Provider))
	lm := cl.SplitBrainResolverStrategy == StrategyLeaseMajority
	if cl.StableAfter == 0 {
		cl.StableAfter = DefaultStableAfter
		if lm {
			cl.StableAfter = DefaultStableAfterLeaseMajority
		}
	}
	if cl.FailureDetector.HeartbeatInterval == 0 {
		cl.FailureDetector.HeartbeatInterval = DefaultHeartbeatInterval
		if lm {
			cl.FailureDetector.HeartbeatInterval = DefaultHeartbeatIntervalLeaseMajority
		}
	}
	if cl.FailureDetector.AcceptableHeartbeatPause == 0 {
		cl.FailureDetector.AcceptableHeartbeatPause = DefaultAcceptableHeartbeatPause
		if lm {
			cl.FailureDetector.AcceptableHeartbeatPause = DefaultAcceptableHeartbeatPauseLeaseMajority
		}
	}
	if cl.DownOnConnectionRefused == nil {
		// lease-majority downs a refusing peer at once too, but only
		// after this side acquired the shared lease.
		on := cl.SplitBrainResolverStrategy == StrategyAutoDown || cl.SplitBrainResolverStrategy == StrategyLeaseMajority
		cl.DownOnConnectionRefused = &on
	}
	if cl.AkkaConfigPath != "" && baseDir != "" && !filepath.IsAbs(cl.AkkaConfigPath) {
		cl.AkkaConfigPath = filepath.Join(baseDir, cl.AkkaConfigPath)
	}

	o := &c.OpcUa
	if o.ApplicationUri == "" {
		// Escaped so that an invalid PublicHostname is reported once, there.
		o.ApplicationUri = "urn:" + url.PathEscape(cl.PublicHostname) + ":otopcua"
	}
	switch {
	case strings.EqualFold(o.RedundancySupport, RedundancyWarm):
		o.RedundancySupport = RedundancyWarm
	case strings.EqualFold(o.RedundancySupport, RedundancyHot):
		o.RedundancySupport = RedundancyHot
	case strings.EqualFold(o.RedundancySupport, RedundancyHotAndMirrored):
		o.RedundancySupport = RedundancyHotAndMirrored
	}
	for i, p := range o.Security.Policies {
		o.Security.Policies[i] = canonicalPolicy(p)
	}

	o.WriteMode = strings.ToLower(o.WriteMode)
	for _, rights := range []*[]string{&o.Authorization.Administrator, &o.Authorization.ConfigEditor, &o.Authorization.Operator,
		&o.Authorization.Designer, &o.Authorization.Viewer, &o.Authorization.Anonymous} {
		for i := range *rights {
			(*rights)[i] = strings.ToLower(strings.TrimSpace((*rights)[i]))
		}
	}

	c.Redundancy.FloatingAddress.resolve(c.Node.ClusterId)
	c.Redundancy.DeviceHealth = strings.ToLower(strings.TrimSpace(c.Redundancy.DeviceHealth))
	c.ConfigDb.Provider = strings.ToLower(c.ConfigDb.Provider)
	if c.ConfigDb.Provider == ProviderSQLite && c.ConfigDb.ConnectionString == "" {
		c.ConfigDb.ConnectionString = "file:otopcua.db"
	}

	t := &c.Telemetry
	t.LogLevel = strings.ToLower(t.LogLevel)
	switch t.LogLevel { // the .NET spellings
	case "information":
		t.LogLevel = "info"
	case "warning":
		t.LogLevel = "warn"
	}
	t.LogFormat = strings.ToLower(t.LogFormat)
}

// normaliseRoles lower-cases roles and drops repeats, keeping order.
func normaliseRoles(in []string) []string {
	out := make([]string, 0, len(in))
	for _, r := range in {
		r = strings.ToLower(strings.TrimSpace(r))
		if r != "" && !contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// mergeLayer is the koanf merge function of every layer: src overrides
// dest; sections merge key by key; a list is replaced, except by an
// index-keyed map, which replaces only the elements it names.
func mergeLayer(src, dest map[string]any) error {
	for k, sv := range src {
		if s, ok := sv.(map[string]any); ok {
			switch d := dest[k].(type) {
			case map[string]any:
				if err := mergeLayer(s, d); err != nil {
					return err
				}
				continue
			case []any:
				if list, ok := overlayList(d, s); ok {
					dest[k] = list
					continue
				}
			}
		}
		dest[k] = sv
	}
	return nil
}

// envReader turns OTOPCUA_ variables into koanf keys and remembers which
// variable set which key, so that a problem can name it.
type envReader struct {
	sources map[string]string // lower-case path → variable name
	items   problems
}

// sections are the lower-case top-level section names.
var sections = func() map[string]bool {
	m := map[string]bool{}
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		m[strings.ToLower(t.Field(i).Name)] = true
	}
	return m
}()

func (e *envReader) transform(name, value string) (string, any) {
	rest := strings.ToLower(strings.TrimPrefix(name, EnvPrefix))
	parts := strings.Split(rest, "__")
	if len(parts) < 2 {
		if sec, _, ok := strings.Cut(rest, "_"); ok && sections[sec] && name != EnvRoles {
			e.items.add(name, value, "accepted names separate section and key with a double underscore, e.g. OTOPCUA_OPCUA__PORT")
		}
		return "", nil // OTOPCUA_ROLES is applied separately; others are not ours
	}
	if !sections[parts[0]] {
		return "", nil
	}
	path := strings.Join(parts, ".")
	e.sources[path] = name
	return path, value
}

// sourceFor names the variable that set key ("Cluster:SeedNodes:1"), its
// list, or one of its elements; "" when the value did not come from the
// environment.
func (e *envReader) sourceFor(key string) string {
	path := strings.ToLower(strings.ReplaceAll(key, ":", "."))
	if s, ok := e.sources[path]; ok {
		return s
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		if _, ok := digits(path[i+1:], 1, 6); ok {
			if s, ok := e.sources[path[:i]]; ok {
				return s
			}
		}
	}
	return ""
}

func lookupEnv(environ []string, name string) (string, bool) {
	for i := len(environ) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(environ[i], "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// bytesProvider is a koanf.Provider over file contents already read.
type bytesProvider []byte

func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("config: bytes provider needs a parser")
}

// jsonParser is koanf's JSON parser plus what appsettings.json needs: .NET
// comments and trailing commas, errors located by line, and keys folded to
// lower case with ':' and '.' splitting flat keys into sections.
type jsonParser struct {
	file  string
	names map[string]string // lower-case path → key as written
}

func (p *jsonParser) Unmarshal(b []byte) (map[string]any, error) {
	m, err := kjson.Parser().Unmarshal(stripJSONC(b))
	if err != nil {
		return nil, newSyntaxError(p.file, b, err)
	}
	return p.object(m, "", ""), nil
}

func (p *jsonParser) Marshal(m map[string]any) ([]byte, error) {
	return kjson.Parser().Marshal(m)
}

func (p *jsonParser) object(in map[string]any, key, path string) map[string]any {
	out := make(map[string]any, len(in))
	for _, k := range sortedKeys(in) {
		segs := strings.FieldsFunc(k, func(r rune) bool { return r == ':' || r == '.' })
		if len(segs) == 0 {
			segs = []string{k}
		}
		p.put(out, segs, in[k], key, path)
	}
	return out
}

func (p *jsonParser) put(dst map[string]any, segs []string, v any, key, path string) {
	for i, s := range segs {
		lower := strings.ToLower(s)
		key, path = joinKey(key, s), joinPath(path, lower)
		if _, seen := p.names[path]; !seen {
			p.names[path] = key
		}
		if i < len(segs)-1 {
			next, ok := dst[lower].(map[string]any)
			if !ok {
				next = map[string]any{}
				dst[lower] = next
			}
			dst = next
			continue
		}
		switch x := v.(type) {
		case map[string]any:
			child := p.object(x, key, path)
			if existing, ok := dst[lower].(map[string]any); ok {
				_ = mergeLayer(child, existing)
			} else {
				dst[lower] = child
			}
		case []any:
			list := make([]any, len(x))
			for j, e := range x {
				if m, ok := e.(map[string]any); ok {
					e = p.object(m, fmt.Sprintf("%s:%d", key, j), fmt.Sprintf("%s.%d", path, j))
				}
				list[j] = e
			}
			dst[lower] = list
		default:
			dst[lower] = v
		}
	}
}

// canonicalPolicy spells an OpcUa:Security:Policies entry as in
// SecurityPolicies ("none" is "None:None"); an unknown one is returned
// unchanged for validation to report.
func canonicalPolicy(p string) string {
	if strings.EqualFold(p, SecurityPolicyNone) {
		return "None:None"
	}
	for _, known := range SecurityPolicies {
		if strings.EqualFold(p, known) {
			return known
		}
	}
	return p
}
