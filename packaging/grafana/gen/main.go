// Command gen rewrites packaging/grafana/dashboards/*.json from the builders
// of package grafana. Run it from anywhere in the module:
//
//	go run ./packaging/grafana/gen
//	go generate ./packaging/grafana
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/otopcua/otopcua/packaging/grafana"
)

func main() {
	out := flag.String("out", "", "folder to write the dashboards to (default: packaging/grafana/dashboards of the module)")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string) error {
	if out == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		out = filepath.Join(root, "packaging", "grafana", "dashboards")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if err := grafana.Write(out); err != nil {
		return err
	}
	fmt.Println("wrote the dashboards to", out)
	return nil
}

// moduleRoot is the nearest folder at or above the working directory that
// holds go.mod: go run and go generate both run inside the module.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory: run inside the otopcua module or pass -out")
		}
		dir = parent
	}
}
