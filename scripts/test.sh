#!/usr/bin/env bash
# otopcua's test command (the README names it; .ci/run runs it on a fresh machine).
#
# Installs what the tests need when it is missing (Node.js + npm for the
# interop client, iptables and PostgreSQL for the drills, etcd-server for
# tests/etcd and the etcd lease, systemd-analyze for the unit check,
# Prometheus and promtool for tests/packaging and tests/rig, Chromium for
# tests/browser),
# then vets and runs every Go test with the race detector.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
command -v iptables >/dev/null 2>&1 || need_apt+=(iptables)
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
# systemd-analyze verifies packaging/systemd/otopcua.service (tests/packaging); a
# container image of Debian lacks it.
command -v systemd-analyze >/dev/null 2>&1 || need_apt+=(systemd)
# PostgreSQL server binaries for tests/pg (Debian: /usr/lib/postgresql/<version>/bin).
compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || command -v initdb >/dev/null 2>&1 || need_apt+=(postgresql)
# etcd-server for tests/etcd and the etcd lease (cluster/lease).
command -v etcd >/dev/null 2>&1 || need_apt+=(etcd-server)
# promtool for tests/packaging (the Prometheus configuration, alert rules and dashboard queries).
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
# A headless browser for tests/browser (the admin pages, driven with chromedp).
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
  command -v google-chrome >/dev/null 2>&1 || [ -n "${OTOPCUA_CHROMIUM:-}" ] || need_apt+=(chromium)
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "installing ${need_apt[*]} (Debian packages)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    echo "missing ${need_apt[*]}: install them (as root: apt-get install ${need_apt[*]})" >&2
    exit 1
  fi
fi

# The independent OPC UA client for the interop tests.
(cd tests/interop && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

gofmt_out=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './tests/interop/node_modules/*'))
if [ -n "$gofmt_out" ]; then
  echo "gofmt would change:"; echo "$gofmt_out"; exit 1
fi
go vet ./...
# tests/chaos runs its 3-minute variant here (10 minutes by default), with
# every fault kind, partitions included, on a fresh seed each run.
export OTOPCUA_CHAOS_DURATION="${OTOPCUA_CHAOS_DURATION:-3m}"
# tests/chaos runs alone at the end: its six nodes under faults are judged
# on timings a concurrent package's load would distort.
go test -race -count=1 -timeout 30m $(go list ./... | grep -v '/tests/chaos$') "$@"
# Tests that start several protoactor remotes in one process cannot run
# under the race detector (protoactor's remote.Start writes gRPC's global
# logger), and the short abuse soak's timing limits are for a normal build;
# they skip there and run here without it.
# bench/falsepositive's short run spins both cores for 75 s: it runs here,
# after the race pass, so that its load starves no other package's test.
go test -count=1 -timeout 10m ./actors/ ./cluster/daemon/ ./cluster/pubsub/ ./cluster/singleton/ ./bench/soak/
go test -count=1 -timeout 10m ./bench/falsepositive/
# The chaos run's CI variant (OTOPCUA_CHAOS_DURATION above) and the
# secondary-writes mutation the checker must catch.
go test -count=1 -timeout 15m ./tests/chaos/
