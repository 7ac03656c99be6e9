#!/bin/sh
# Runs otopcua's subscription throughput benchmark (see bench/README.md):
# builds benchserver, subload and subbench, then runs every implementation
# at every item count and prints a Markdown table on stdout (progress on
# stderr). Extra arguments go to subbench, for example
#
#   bench/run-subscriptions.sh -items 1000 -warmup 2s -measure 5s
#   bench/run-subscriptions.sh -impls otopcua -items 50000 -repeat 3
set -eu
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT INT TERM
go build -o "$bin/" ./bench/cmd/benchserver ./bench/cmd/subload ./bench/cmd/subbench
"$bin/subbench" -bin "$bin" "$@"
