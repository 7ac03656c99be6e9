// Command otopcua runs and checks otopcua nodes.
//
//	otopcua version                        print version and commit
//	otopcua config check FILE              load and validate FILE (+ OTOPCUA_ overrides)
//	otopcua config effective FILE          the effective cluster settings as HOCON
//	otopcua config effective --url URL     what a running node installed
//	otopcua status [--url URL]             a running node's actor tree
//	otopcua host --config FILE             run this node until SIGINT/SIGTERM
//	otopcua deploy DOC --config FILE       validate a deployment document and store it
//	                                       in the Config DB (--check: validate only;
//	                                       docs/deployments.md)
//	otopcua demo [--kill-primary-after D]  a supervised local pair with a live table
//	otopcua client -F URL,URL read|write|browse|subscribe|redundancy …
//	                                       an OPC UA client that follows the redundant set
//	                                       (docs/client.md)
//	otopcua simulate modbus [--listen ADDR] [--profile press|tank]
//	                                       a Modbus TCP field device whose registers
//	                                       move, for rigs and demonstrations
//
// status and config effective --url read a running node's reports: they
// send an API token of a Viewer or above (--token, or OTOPCUA_TOKEN; otopcua
// user token NAME makes one) unless the node runs with Http:AnonymousRead.
//
// Exit codes: 0 success (including a graceful stop on SIGINT/SIGTERM),
// 1 the host stopped with an error, 2 a usage error or an invalid
// configuration (every invalid setting is printed with its key, its value
// and what is accepted), 3 the node was downed or removed from its cluster
// and must be restarted by its supervisor.
//
// Version and commit are stamped at build time:
//
//	go build -ldflags "-X main.version=1.2.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/otopcua
package main
