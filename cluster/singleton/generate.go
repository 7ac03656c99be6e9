package singleton

// The hand-over message lives in package cluster/wire. Regenerate
// singleton.pb.go after editing ../wire/singleton.proto (needs protoc from
// Debian's protobuf-compiler and protoc-gen-go v1.36.12 on PATH):
//
//go:generate protoc --go_out=../wire --go_opt=paths=source_relative -I ../wire ../wire/singleton.proto
