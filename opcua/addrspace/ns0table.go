package addrspace

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"errors"
	"fmt"
	"io"

	"github.com/gopcua/opcua/ua"
)

// ns0Table is namespace 0 compiled from gopcua's embedded standard nodeset
// (schema.OpcUaNodeSet2) by compileNodeSet and stored in the binary form
// below, because parsing the 3.5 MB XML takes a quarter of a second and a
// decode of the table a few milliseconds. TestStandardTable proves the file
// equals a fresh compile of the nodeset; regenerate it with
//
//	go generate ./opcua/addrspace
//
//go:generate go test -run TestStandardTable -update
//go:embed ns0.bin.gz
var ns0Table []byte

const tableMagic = "otopcua-ns0-v1"

// Per-node flag bits of the table.
const (
	flagAbstract = 1 << iota
	flagSymmetric
	flagNoLoops
	flagExecutable
	flagUserExecutable
	flagHistorizing
	flagDescription
	flagInverseName
	flagValue
	flagVariable // dataType .. minSampling follow
)

// encodeTemplate writes t in the table form, gzip-compressed.
func encodeTemplate(t *template) ([]byte, error) {
	raw, err := encodeTable(t)
	if err != nil {
		return nil, err
	}
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return z.Bytes(), nil
}

// encodeTable writes t in the table form, uncompressed.
func encodeTable(t *template) ([]byte, error) {
	b := ua.NewBuffer(nil)
	b.WriteString(tableMagic)
	b.WriteUint32(uint32(len(t.nodes)))
	b.WriteUint32(uint32(t.refs))
	for i := range t.nodes {
		encodeNode(b, &t.nodes[i])
	}
	return b.Bytes(), b.Error()
}

func encodeNode(b *ua.Buffer, tn *tmplNode) {
	n := &tn.n
	var flags uint16
	set := func(bit uint16, on bool) {
		if on {
			flags |= bit
		}
	}
	set(flagAbstract, n.isAbstract)
	set(flagSymmetric, n.symmetric)
	set(flagNoLoops, n.containsNoLoops)
	set(flagExecutable, n.executable)
	set(flagUserExecutable, n.userExecutable)
	set(flagHistorizing, n.historizing)
	set(flagDescription, n.description != nil)
	set(flagInverseName, n.inverseName != nil)
	set(flagValue, tn.value != nil)
	set(flagVariable, n.dataType != nil)

	b.WriteStruct(n.id)
	b.WriteByte(byte(n.class))
	b.WriteUint16(flags)
	b.WriteUint16(n.browseName.NamespaceIndex)
	b.WriteString(n.browseName.Name)
	b.WriteStruct(n.displayName)
	if n.description != nil {
		b.WriteStruct(n.description)
	}
	if n.inverseName != nil {
		b.WriteStruct(n.inverseName)
	}
	b.WriteUint32(n.writeMask)
	b.WriteByte(n.eventNotifier)
	if n.dataType != nil {
		b.WriteStruct(n.dataType)
		b.WriteInt32(n.valueRank)
		b.WriteUint32(uint32(len(n.arrayDimensions)))
		for _, d := range n.arrayDimensions {
			b.WriteUint32(d)
		}
		b.WriteByte(n.accessLevel)
		b.WriteByte(n.userAccessLevel)
		b.WriteFloat64(n.minSampling)
	}
	if tn.value != nil {
		b.WriteStruct(tn.value.Value)
	}
	b.WriteInt32(tn.super)
	b.WriteUint32(uint32(len(tn.refs)))
	for _, r := range tn.refs {
		b.WriteInt32(r.typ)
		b.WriteInt32(r.target)
		b.WriteBool(r.forward)
	}
}

// decodeTemplate reads a table written by encodeTemplate.
func decodeTemplate(z []byte) (*template, error) {
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("ns0 table: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("ns0 table: %w", err)
	}
	return decodeTable(raw)
}

// decodeTable reads a table written by encodeTable. Damaged input is an
// error: a panic of gopcua's decoders is recovered into one.
func decodeTable(raw []byte) (t *template, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("ns0 table: damaged: %v", r)
		}
	}()
	b := ua.NewBuffer(raw)
	if m := b.ReadString(); m != tableMagic {
		return nil, fmt.Errorf("ns0 table: magic %q, want %q", m, tableMagic)
	}
	count := int(b.ReadUint32())
	t = &template{refs: int(b.ReadUint32())}
	if count > len(raw) || t.refs > len(raw) {
		return nil, errors.New("ns0 table: counts exceed its size")
	}
	t.nodes = make([]tmplNode, count)
	for i := range t.nodes {
		if err := decodeNode(b, &t.nodes[i], count); err != nil {
			return nil, fmt.Errorf("ns0 table: node %d: %w", i, err)
		}
	}
	if b.Len() != 0 {
		return nil, fmt.Errorf("ns0 table: %d trailing bytes", b.Len())
	}
	return t, nil
}

func decodeNode(b *ua.Buffer, tn *tmplNode, count int) error {
	n := &tn.n
	n.id = new(ua.NodeID)
	b.ReadStruct(n.id)
	n.key = keyOf(n.id)
	n.class = ua.NodeClass(b.ReadByte())
	flags := b.ReadUint16()
	n.browseName = &ua.QualifiedName{NamespaceIndex: b.ReadUint16(), Name: b.ReadString()}
	n.displayName = new(ua.LocalizedText)
	b.ReadStruct(n.displayName)
	if flags&flagDescription != 0 {
		n.description = new(ua.LocalizedText)
		b.ReadStruct(n.description)
	}
	if flags&flagInverseName != 0 {
		n.inverseName = new(ua.LocalizedText)
		b.ReadStruct(n.inverseName)
	}
	n.isAbstract = flags&flagAbstract != 0
	n.symmetric = flags&flagSymmetric != 0
	n.containsNoLoops = flags&flagNoLoops != 0
	n.executable = flags&flagExecutable != 0
	n.userExecutable = flags&flagUserExecutable != 0
	n.historizing = flags&flagHistorizing != 0
	n.writeMask = b.ReadUint32()
	n.eventNotifier = b.ReadByte()
	if flags&flagVariable != 0 {
		n.dataType = new(ua.NodeID)
		b.ReadStruct(n.dataType)
		n.valueRank = b.ReadInt32()
		dims := int(b.ReadUint32())
		if dims > b.Len() {
			return errors.New("array dimensions exceed the table")
		}
		for range dims {
			n.arrayDimensions = append(n.arrayDimensions, b.ReadUint32())
		}
		n.accessLevel = b.ReadByte()
		n.userAccessLevel = b.ReadByte()
		n.minSampling = b.ReadFloat64()
	}
	if flags&flagValue != 0 {
		v := new(ua.Variant)
		b.ReadStruct(v)
		tn.value = &ua.DataValue{EncodingMask: ua.DataValueValue, Value: v}
	}
	tn.super = b.ReadInt32()
	nrefs := int(b.ReadUint32())
	if nrefs > b.Len() {
		return errors.New("references exceed the table")
	}
	tn.refs = make([]tmplRef, nrefs)
	for i := range tn.refs {
		tn.refs[i] = tmplRef{typ: b.ReadInt32(), target: b.ReadInt32(), forward: b.ReadBool()}
	}
	if err := b.Error(); err != nil {
		return err
	}
	if tn.super < -1 || int(tn.super) >= count {
		return fmt.Errorf("supertype index %d out of range", tn.super)
	}
	for _, r := range tn.refs {
		if r.typ < 0 || int(r.typ) >= count || r.target < 0 || int(r.target) >= count {
			return fmt.Errorf("reference (%d, %d) out of range", r.typ, r.target)
		}
	}
	return nil
}
