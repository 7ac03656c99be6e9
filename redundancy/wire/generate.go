package wire

// Regenerate wire.pb.go after editing wire.proto (needs protoc from Debian's
// protobuf-compiler and protoc-gen-go v1.36.12 on PATH):
//
//go:generate protoc --go_out=. --go_opt=paths=source_relative wire.proto
