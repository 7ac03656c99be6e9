// Package wire holds the protobuf messages of forwarded requests.
package wire

// Regenerate forward.pb.go after editing forward.proto (needs protoc from
// Debian's protobuf-compiler and protoc-gen-go v1.36.12 on PATH). The file
// name is registered globally by the protobuf runtime: it must differ from
// every other .proto linked into otopcua.
//
//go:generate protoc --go_out=. --go_opt=paths=source_relative forward.proto
