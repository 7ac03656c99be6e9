package addrspace

import (
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite ns0.bin.gz from the standard nodeset")

func gunzip(t *testing.T, z []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStandardTable proves the embedded table is exactly what compiling
// gopcua's standard nodeset gives today, and that the table decodes back to
// the same template.
func TestStandardTable(t *testing.T) {
	if testing.Short() && !*update {
		t.Skip("parses the 3.5 MB XML nodeset (seconds under -race)")
	}
	start := time.Now()
	compiled, err := compileStandardNodeSet()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compiling the XML nodeset: %v, %d nodes, %d references", time.Since(start), len(compiled.nodes), compiled.refs)
	enc, err := encodeTemplate(compiled)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("ns0.bin.gz", enc, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote ns0.bin.gz (%d bytes)", len(enc))
		return
	}
	if !bytes.Equal(gunzip(t, enc), gunzip(t, ns0Table)) {
		t.Fatal("ns0.bin.gz is stale: run go generate ./opcua/addrspace")
	}
	start = time.Now()
	decoded, err := decodeTemplate(ns0Table)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("decoding the table: %v", time.Since(start))
	reenc, err := encodeTemplate(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gunzip(t, reenc), gunzip(t, enc)) {
		t.Fatal("decode(encode(nodeset)) does not encode back to the same table")
	}
}

// BenchmarkDecodeTable measures the cost of namespace 0 that every New pays.
func BenchmarkDecodeTable(b *testing.B) {
	for b.Loop() {
		if _, err := decodeTemplate(ns0Table); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNew measures building one address space: decoding the table
// and instantiating it.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		New(Options{})
	}
}
