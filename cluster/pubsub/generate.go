package pubsub

// The wire messages live in package cluster/wire. Regenerate pubsub.pb.go
// after editing ../wire/pubsub.proto (needs protoc from Debian's
// protobuf-compiler and protoc-gen-go v1.36.12 on PATH):
//
//go:generate protoc --go_out=../wire --go_opt=paths=source_relative -I ../wire -I /usr/include ../wire/pubsub.proto
