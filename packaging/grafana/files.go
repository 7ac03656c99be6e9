package grafana

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// File is one generated dashboard: its file name in the dashboards folder
// and its JSON.
type File struct {
	Name string
	JSON []byte
}

// dashboards lists what Files generates, in order.
var dashboards = []struct {
	name  string
	build func() (dashboard.Dashboard, error)
}{
	{"otopcua-fleet.json", Fleet},
	{"otopcua-node.json", Node},
}

// Files builds every dashboard and encodes it as Grafana's JSON model,
// indented, with a final newline. The bytes depend only on the builders.
func Files() ([]File, error) {
	files := make([]File, 0, len(dashboards))
	for _, d := range dashboards {
		built, err := d.build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", d.name, err)
		}
		data, err := json.MarshalIndent(built, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", d.name, err)
		}
		files = append(files, File{Name: d.name, JSON: append(data, '\n')})
	}
	return files, nil
}

// Write writes every dashboard into dir (packaging/grafana/dashboards), which
// must exist, replacing the files there.
func Write(dir string) error {
	files, err := Files()
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.JSON, 0o644); err != nil {
			return err
		}
	}
	return nil
}
