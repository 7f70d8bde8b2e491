#!/usr/bin/env bash
# `make peer-sarama`: IBM/sarama's own functional test suite (the tests of
# its functional_*_test.go files, build tag `functional`, at the version
# e2e/go.mod requires) against a cluster of five facades.
#
# sarama's suite expects five brokers, ids 1 to 5, each behind a toxiproxy
# proxy named kafka<id> that listens on 127.0.0.1:2909<id> (those ports are
# hard-coded in its functional_test.go, and so is the bootstrap list), with
# each broker advertising its proxy's address, so that a test can cut one
# broker off. So this cannot run inside `go test ./e2e/` on free ports: it
# starts its own processes and refuses to start when a port is taken. What it
# starts, on a fresh data directory:
#   - queen-dev on QUEEN_DEV_ADDR (127.0.0.1:16652);
#   - five facades, cluster "sarama", node ids 1-5, listening on
#     127.0.0.1:19101-19105 (operator listeners 19111-19115), each advertising
#     127.0.0.1:2909<id>; num.partitions 1 and no initial rebalance delay, as
#     sarama's docker-compose brokers are configured;
#   - toxiproxy (github.com/Shopify/toxiproxy/v2's server, built from the Go
#     module proxy into the temp directory at run time), its API on
#     127.0.0.1:19199, with the five proxies 127.0.0.1:2909<id> ->
#     127.0.0.1:1910<id> created before the suite starts (the suite reuses
#     proxies that exist).
# The module is copied out of the Go module cache into the temp directory
# (never committed) and its tests run there with TOXIPROXY_ADDR and
# KAFKA_VERSION=4.2.0 (the Kafka release the facade models), which makes the
# suite use the environment as it is (tests that need `docker compose exec`
# skip themselves; `docker compose stop|start` is served by the stand-in
# below), and DEBUG=true (sarama's own log, as its CI runs it). Only the
# tests its functional_*_test.go files define run (-run), not sarama's unit
# tests.
# Every test scripts/peer-sarama.pass names must pass; a test may fail only if
# scripts/peer-sarama.known names it (each with its class and reason:
# docs/testing.md's triage table), and a known one that passes is reported.
#
# PEER_LOG=<file> keeps the go test -json output (default: a temp file, named
# at the end). PEER_RUN=<regexp> runs only those tests (for triage; the lists
# are then not checked).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-bin}
QUEEN_DEV_ADDR=${QUEEN_DEV_ADDR:-127.0.0.1:16652}
TOXI_API=127.0.0.1:19199
TOXIPROXY_VERSION=v2.12.0
KAFKA_VERSION=4.2.0
PASSLIST=scripts/peer-sarama.pass
KNOWN=scripts/peer-sarama.known
NODES=5
# shellcheck source=scripts/peer-lib.sh
. scripts/peer-lib.sh

# start_facade <id>: node <id> of the cluster, in the background; its pid goes
# to $work/facade-<id>.pid (the `docker` stand-in below stops and starts it).
start_facade() {
  env QUEEN_URL="http://$QUEEN_DEV_ADDR" QUEEN_TOKEN=queen-kafka-dev QUEEN_KAFKA_NODE_ID="$1" QUEEN_KAFKA_CLUSTER=sarama \
    QUEEN_KAFKA_DEFAULT_PARTITIONS=1 QUEEN_KAFKA_GROUP_JOIN_DELAY_MS=0 \
    QUEEN_KAFKA_ADDR="127.0.0.1:$((19100 + $1))" QUEEN_KAFKA_HTTP_ADDR="127.0.0.1:$((19110 + $1))" \
    QUEEN_KAFKA_ADVERTISED_ADDR="127.0.0.1:$((29090 + $1))" \
    "$BIN/queen-kafka" >>"$work/facade-$1.log" 2>&1 </dev/null &
  echo $! >"$work/facade-$1.pid"
}
# wait_cluster: until every running facade lists every running facade as
# live (at most 20 s): the state a restarted Kafka broker is in once it is
# back in its partitions' ISR, which sarama's setup waits for (the
# facade's Metadata has no ISR to lag), so the test after a restart does not
# find its peers naming a node that has not rejoined.
wait_cluster() {
  local i up n ok
  for _ in $(seq 1 100); do
    up=() ok=1
    for i in $(seq 1 $NODES); do
      if kill -0 "$(cat "$work/facade-$i.pid" 2>/dev/null)" 2>/dev/null; then up+=("$i"); fi
    done
    for i in "${up[@]}"; do
      n=$(curl -fsS "http://127.0.0.1:$((19110 + i))/metrics" 2>/dev/null | awk '/^queen_kafka_cluster_live_nodes /{print $2}')
      [ "${n:-0}" = "${#up[@]}" ] || ok=0
    done
    [ "$ok" = 0 ] || return 0
    sleep 0.2
  done
  echo "peer-sarama: the facades did not agree on ${#up[@]} live nodes within 20 s" >&2
  return 1
}

# The suite stops and starts a broker with `docker compose stop|start
# kafka-<id>` (TestFuncAdminListConsumerGroupOffsets,
# TestConsumerFetchFollowerFailover, TestFuncTxnProduceWithBrokerFailure).
# The run puts a `docker` first on the tests' PATH that calls this script as
# `peer-sarama.sh docker ...` with PEER_SARAMA_WORK set: it stops (SIGTERM,
# as docker does) or starts that facade. Anything else is refused.
if [ "${1:-}" = docker ]; then
  shift
  work=${PEER_SARAMA_WORK:?}
  [ "${1:-}" = compose ] || { echo "peer-sarama's docker: only 'docker compose' is served" >&2; exit 1; }
  shift
  while [ "${1:-}" = --profile ]; do shift 2; done
  verb=${1:-} service=${2:-}
  case "$verb:$service" in
  stop:kafka-[1-5] | start:kafka-[1-5]) ;;
  *) echo "peer-sarama's docker: only 'compose stop|start kafka-<1-5>' is served, not: $*" >&2; exit 1 ;;
  esac
  id=${service#kafka-}
  pid=$(cat "$work/facade-$id.pid")
  echo "$(date -u +%T.%N) docker compose $verb $service (pid $pid)" >>"$work/docker.log"
  if [ "$verb" = stop ]; then
    stop_pid "$pid"
  elif ! kill -0 "$pid" 2>/dev/null; then
    start_facade "$id"
    wait_cluster
  fi
  exit 0
fi

need_built peer-sarama
BIN=$(cd "$BIN" && pwd)
version=$(cd e2e && go list -m -f '{{.Version}}' github.com/IBM/sarama)
src=$(cd e2e && go mod download -json "github.com/IBM/sarama@$version" | jq -r .Dir)
[ -d "$src" ] || { echo "peer-sarama: github.com/IBM/sarama@$version is not in the module cache" >&2; exit 2; }

addrs=("$QUEEN_DEV_ADDR" "$TOXI_API")
for i in $(seq 1 $NODES); do
  addrs+=("127.0.0.1:$((19100 + i))" "127.0.0.1:$((19110 + i))" "127.0.0.1:$((29090 + i))")
done
refuse_busy peer-sarama "sarama's tests need 127.0.0.1:29091-29095; the facades take 19101-19105 and 19111-19115, toxiproxy 19199; QUEEN_DEV_ADDR moves queen-dev" \
  "${addrs[@]}"

work=$(mktemp -d)
LOG=${PEER_LOG:-$work/sarama.json}
dev_pid='' toxi_pid=''
# stop: the facades (whichever process each pid file names now), toxiproxy,
# then queen-dev.
stop() {
  local i stoppers=()
  for i in $(seq 1 $NODES); do
    if [ -f "$work/facade-$i.pid" ]; then
      stop_pid "$(cat "$work/facade-$i.pid")" &
      stoppers+=($!)
    fi
  done
  for i in "${stoppers[@]}"; do wait "$i"; done
  [ -z "$toxi_pid" ] || stop_pid "$toxi_pid"
  [ -z "$dev_pid" ] || stop_pid "$dev_pid"
}
# peer_tidy: the module's copy and toxiproxy's build go, whatever the run.
peer_tidy() { chmod -R u+w "$work/sarama" 2>/dev/null; rm -rf "$work/sarama" "$work/gobin"; }
peer_trap

echo "peer-sarama: building toxiproxy $TOXIPROXY_VERSION and copying sarama $version into $work"
(cd "$work" && GOBIN=$work/gobin GOWORK=off GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION") ||
  { echo "peer-sarama: could not build toxiproxy's server" >&2; exit 2; }
cp -r "$src" "$work/sarama"
chmod -R u+w "$work/sarama"

QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$work/data QUEEN_DEV_TOKENS="queen-kafka-dev=local" \
  "$BIN/queen-dev" >"$work/queen-dev.log" 2>&1 &
dev_pid=$!
wait_listen peer-sarama "$dev_pid" "$QUEEN_DEV_ADDR" queen-dev 300
proxies=()
for i in $(seq 1 $NODES); do
  start_facade "$i"
  proxies+=("{\"name\":\"kafka$i\",\"listen\":\"127.0.0.1:$((29090 + i))\",\"upstream\":\"127.0.0.1:$((19100 + i))\",\"enabled\":true}")
done
(IFS=,; echo "[${proxies[*]}]") >"$work/toxiproxy.json"
"$work/gobin/server" -host "${TOXI_API%:*}" -port "${TOXI_API##*:}" -config "$work/toxiproxy.json" >"$work/toxiproxy.log" 2>&1 &
toxi_pid=$!
for i in $(seq 1 $NODES); do
  wait_listen peer-sarama "$(cat "$work/facade-$i.pid")" "127.0.0.1:$((19100 + i))" "facade $i" 300
done
wait_listen peer-sarama "$toxi_pid" "$TOXI_API" toxiproxy 300
for i in $(seq 1 $NODES); do
  wait_listen peer-sarama "$toxi_pid" "127.0.0.1:$((29090 + i))" "toxiproxy's proxy kafka$i" 300
done
mkdir "$work/shim"
printf '#!/bin/sh\nexec %q docker "$@"\n' "$ROOT/scripts/peer-sarama.sh" >"$work/shim/docker"
chmod +x "$work/shim/docker"
# Every node must see the other four before the suite's first Metadata.
wait_cluster

# The functional tests: every Test function of functional_*_test.go.
tests=$(cd "$work/sarama" && grep -ho '^func Test[A-Za-z0-9_]*(t \*testing.T)' functional_*_test.go | sed -E 's/^func (Test[A-Za-z0-9_]*).*/\1/' | sort -u | paste -sd'|')
run="^($tests)\$"
[ -z "${PEER_RUN:-}" ] || run=$PEER_RUN
echo "peer-sarama: running sarama's functional tests (about 5 minutes); processes' logs in $work"
set +e
(cd "$work/sarama" && export PATH="$work/shim:$PATH" PEER_SARAMA_WORK=$work BIN QUEEN_DEV_ADDR &&
  DEBUG=true GOWORK=off GOFLAGS=-mod=mod TOXIPROXY_ADDR="http://$TOXI_API" KAFKA_VERSION=$KAFKA_VERSION \
  go test -tags functional -json -count=1 -timeout 30m -run "$run" .) >"$LOG" 2>"$work/go-test.stderr"
set -e
for p in "$dev_pid" "$toxi_pid" $(cat "$work"/facade-*.pid); do
  kill -0 "$p" 2>/dev/null || echo "peer-sarama: a process died during the run (logs: $work)" >&2
done

# Verdicts: "<action> <test>" for every test and subtest.
verdicts=$(jq -r 'select(.Test != null and (.Action == "pass" or .Action == "fail" or .Action == "skip")) | "\(.Action) \(.Test)"' "$LOG")
report_counts peer-sarama "" "$verdicts"
bad=0
if [ -n "${PEER_RUN:-}" ]; then
  grep '^fail ' <<<"$verdicts" || true
  echo "peer-sarama: go test -json output in $LOG"
  exit 0
fi
known=$(known_tests "$KNOWN")
check_failures peer-sarama "$verdicts" "$known" || bad=1
report_known_passes peer-sarama "$verdicts" "$known" "$KNOWN"
check_passes peer-sarama "$verdicts" < <(known_tests "$PASSLIST") || bad=1
if grep -q 'panic: \|test timed out\|build failed\|\[setup failed\]' "$LOG" "$work/go-test.stderr"; then
  echo "peer-sarama: the package panicked, timed out or did not build: $LOG" >&2
  bad=1
fi
echo "peer-sarama: go test -json output in $LOG"
# A passing run drops queen-dev's data once the processes stop; the logs stay.
[ "$bad" -ne 0 ] || clean=1
exit "$bad"
