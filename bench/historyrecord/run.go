package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otopcua/otopcua/bench/internal/fieldrig"
	"github.com/otopcua/otopcua/bench/internal/measure"
	"github.com/otopcua/otopcua/internal/fielddevice"
	"github.com/otopcua/otopcua/tests/procs"
)

const clusterID = "bench"

// result is one run's figures.
type result struct {
	Historize bool `json:"historize"`
	Tags      int  `json:"tags"`
	// CPUPct is the node's CPU over the window, in % of one core.
	CPUPct float64 `json:"cpu_pct"`
	// RecordedPerS and DroppedPerS are samples a second over the window.
	RecordedPerS float64 `json:"recorded_per_s"`
	DroppedPerS  float64 `json:"dropped_per_s"`
	// Recorded is every sample recorded from the start to the window's end,
	// StoreBytes the store's files then; BytesPerValue their ratio.
	Recorded      float64 `json:"recorded"`
	StoreBytes    int64   `json:"store_bytes"`
	BytesPerValue float64 `json:"bytes_per_value"`
	// WindowBytesPerValue is the store's growth over the window divided by
	// the samples recorded in it.
	WindowBytesPerValue float64 `json:"window_bytes_per_value"`
	WindowS             float64 `json:"window_s"`
	// Parts is StoreBytes by kind of file at the window's end: "journal"
	// (the recorder's journal, History:Path/journal), "wal" (Pebble's log,
	// *.log), "tables" (Pebble's *.sst: the blocks and saved heads), "other"
	// (Pebble's MANIFEST, OPTIONS, …).
	Parts map[string]int64 `json:"parts,omitempty"`
}

// run measures one rig: with or without history.
func run(t testing.TB, s settings, hist bool) result {
	l := fieldrig.Layout{Devices: s.devices, PerDevice: s.tags / s.devices}
	devs := fieldrig.StartDevices(t, s.devices)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	walk := newWalk(l)
	walk.step(devs)
	go fieldrig.Tick(ctx, s.change, func() { walk.step(devs) })

	dir := t.TempDir()
	store := filepath.Join(dir, "history")
	cfg := procs.BaseConfig("rec", procs.NewPorts(t))
	cfg["Node"].(map[string]any)["ClusterId"] = clusterID
	cfg["ConfigDb"] = map[string]any{"Provider": "sqlite", "ConnectionString": "file:" + filepath.Join(dir, "config.db")}
	cfg["Deployment"] = map[string]any{"PollInterval": "200ms"}
	cfg["History"] = map[string]any{"Path": store}
	n := procs.Start(t, "rec", cfg)
	n.WaitReady(60 * time.Second)
	doc, err := fieldrig.Document(clusterID, l, fieldrig.Addrs(devs), s.poll, -1)
	if err != nil {
		t.Fatal(err)
	}
	if hist {
		doc = historize(t, doc)
	}
	procs.Deploy(t, cfg, string(doc))
	time.Sleep(s.warmup) // the warm-up is the benchmark's setting, not a wait for a condition

	rec0, _ := counters(t, n, hist)
	size0 := dirSize(store)
	cpu0, err := measure.CPUTime(n.PID())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(s.window)
	cpu1, err := measure.CPUTime(n.PID())
	if err != nil {
		t.Fatal(err)
	}
	wall := time.Since(start)
	rec1, drop1 := counters(t, n, hist)
	size1 := dirSize(store)
	parts := dirParts(store)
	r := result{Parts: parts, Historize: hist, Tags: s.tags, CPUPct: measure.CPUPercent(cpu1-cpu0, wall), WindowS: wall.Seconds(),
		RecordedPerS: (rec1 - rec0) / wall.Seconds(), DroppedPerS: drop1 / wall.Seconds(), Recorded: rec1, StoreBytes: size1}
	if rec1 > 0 {
		r.BytesPerValue = float64(size1) / rec1
	}
	if rec1 > rec0 {
		r.WindowBytesPerValue = float64(size1-size0) / (rec1 - rec0)
	}
	return r
}

// walk is the registers' values: each a random walk of ±1 a step around
// its own level.
type walk struct {
	l    fieldrig.Layout
	vals [][]uint16
	rnd  *rand.Rand
}

func newWalk(l fieldrig.Layout) *walk {
	w := &walk{l: l, rnd: rand.New(rand.NewPCG(1, 2))}
	for d := range l.Devices {
		v := make([]uint16, l.PerDevice)
		for r := range v {
			v[r] = uint16(1000 + (d*l.PerDevice+r)%500)
		}
		w.vals = append(w.vals, v)
	}
	return w
}

// step moves every register by ±1 and stores the values.
func (w *walk) step(devs []*fielddevice.Device) {
	for d, v := range w.vals {
		for r := range v {
			if w.rnd.IntN(2) == 0 {
				v[r]++
			} else {
				v[r]--
			}
		}
		devs[d].SetHolding(0, v...)
	}
}

// historize sets "historize": true on every device of doc.
func historize(t testing.TB, doc []byte) []byte {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	for _, d := range m["devices"].([]any) {
		d.(map[string]any)["historize"] = true
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// counters reads the samples recorded and dropped from the node's
// /metrics (0 without history).
func counters(t testing.TB, n *procs.Node, hist bool) (recorded, dropped float64) {
	if !hist {
		return 0, 0
	}
	body, err := n.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return metric(body, "otopcua_history_samples_recorded_total"), metric(body, "otopcua_history_samples_dropped_total")
}

// metric is the value of the unlabelled series name in a Prometheus text
// exposition, 0 when absent.
func metric(body, name string) float64 {
	for _, l := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(l, name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// dirSize is the bytes of the files under dir (0 when it does not exist).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// dirParts is the bytes of the store's files by kind (result.Parts).
func dirParts(dir string) map[string]int64 {
	parts := map[string]int64{}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		kind := "other"
		switch rel, _ := filepath.Rel(dir, path); {
		case strings.HasPrefix(rel, "journal"+string(filepath.Separator)):
			kind = "journal"
		case strings.HasSuffix(rel, ".log"):
			kind = "wal"
		case strings.HasSuffix(rel, ".sst"):
			kind = "tables"
		}
		parts[kind] += info.Size()
		return nil
	})
	return parts
}

// printResults prints the table and one JSON line per run.
func printResults(w io.Writer, rs []result) {
	fmt.Fprintf(w, "| history | tags | node CPU | recorded/s | dropped/s | store | bytes a value (all) | bytes a value (window) |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		if !r.Historize {
			fmt.Fprintf(w, "| off | %d | %.1f %% | – | – | – | – | – |\n", r.Tags, r.CPUPct)
			continue
		}
		fmt.Fprintf(w, "| on | %d | %.1f %% | %.0f | %.0f | %.1f MiB | %.2f | %.2f |\n", r.Tags, r.CPUPct, r.RecordedPerS, r.DroppedPerS,
			float64(r.StoreBytes)/(1<<20), r.BytesPerValue, r.WindowBytesPerValue)
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		if r.Historize && r.Recorded > 0 {
			fmt.Fprintf(w, "store at the end, bytes a value recorded: ")
			for _, k := range []string{"tables", "journal", "wal", "other"} {
				fmt.Fprintf(w, "%s %.2f (%.1f MiB)  ", k, float64(r.Parts[k])/r.Recorded, float64(r.Parts[k])/(1<<20))
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintln(w)
	for _, r := range rs {
		b, _ := json.Marshal(r)
		fmt.Fprintf(w, "%s\n", b)
	}
}
