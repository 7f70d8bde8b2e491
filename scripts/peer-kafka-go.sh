#!/usr/bin/env bash
# `make peer-kafka-go`: segmentio/kafka-go's own test suite (every package of
# the module, at the version e2e/go.mod requires) against the facade.
#
# kafka-go's integration tests dial localhost:9092 (and a SASL listener on
# localhost:9093) by hard-coded addresses, and expect the broker id 1 of
# their docker-compose broker, so this cannot run inside `go test ./e2e/`
# on free ports: it starts its own processes on those ports and refuses to
# start when one is taken. What it starts, on a fresh data directory:
#   - queen-dev on QUEEN_DEV_ADDR (127.0.0.1:16632), two tokens;
#   - a facade on localhost:9092, a cluster of one node with id 1
#     (QUEEN_KAFKA_NODE_ID=1), num.partitions 1 and no initial rebalance
#     delay, as kafka-go's docker-compose broker is configured;
#   - a facade on localhost:9093 with SASL/PLAIN (user adminplain, password
#     admin-secret, which is a Queen token of the same tenant), the
#     docker-compose broker's SASL listener, in a cluster of its own.
# The suite runs with KAFKA_VERSION=4.0.0 (the newest gate kafka-go's
# tests know). Three subtests of TestReaderConsumerGroup are skipped: their
# getOffsets helper calls an unset function and panics against any broker,
# which would end the package's run. Every test scripts/peer-kafka-go.pass
# names must pass; a test may fail only if scripts/peer-kafka-go.known
# names it (each with its class and reason: docs/testing.md's triage
# table), and a known one that passes is reported.
#
# PEER_LOG=<file> keeps the go test -json output (default: a temp file,
# named at the end).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-bin}
QUEEN_DEV_ADDR=${QUEEN_DEV_ADDR:-127.0.0.1:16632}
HTTP1=${HTTP1:-127.0.0.1:18090}
HTTP2=${HTTP2:-127.0.0.1:18091}
PASSLIST=scripts/peer-kafka-go.pass
KNOWN=scripts/peer-kafka-go.known
SKIP='TestReaderConsumerGroup/(consumer_group_commits_on_close|verify_offset_committed)'
# shellcheck source=scripts/peer-lib.sh
. scripts/peer-lib.sh

need_built peer-kafka-go
refuse_busy peer-kafka-go "kafka-go's tests need localhost:9092 and :9093; QUEEN_DEV_ADDR, HTTP1, HTTP2 move the others" \
  127.0.0.1:9092 127.0.0.1:9093 "$QUEEN_DEV_ADDR" "$HTTP1" "$HTTP2"

work=$(mktemp -d)
LOG=${PEER_LOG:-$work/kafka-go.json}
pids=()
stop() { stop_pids "${pids[@]}"; }
peer_trap

QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$work/data QUEEN_DEV_TOKENS="queen-kafka-dev=local,admin-secret=local" \
  "$BIN/queen-dev" >"$work/queen-dev.log" 2>&1 &
pids=($!)
wait_listen peer-kafka-go "${pids[0]}" "$QUEEN_DEV_ADDR" queen-dev
common=(QUEEN_URL="http://$QUEEN_DEV_ADDR" QUEEN_TOKEN=queen-kafka-dev QUEEN_KAFKA_NODE_ID=1
  QUEEN_KAFKA_DEFAULT_PARTITIONS=1 QUEEN_KAFKA_GROUP_JOIN_DELAY_MS=0)
env "${common[@]}" QUEEN_KAFKA_CLUSTER=kafka-go QUEEN_KAFKA_ADDR=127.0.0.1:9092 \
  QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9092 QUEEN_KAFKA_HTTP_ADDR="$HTTP1" \
  "$BIN/queen-kafka" >"$work/facade.log" 2>&1 &
pids+=($!)
env "${common[@]}" QUEEN_KAFKA_CLUSTER=kafka-go-sasl QUEEN_KAFKA_SASL=plain QUEEN_KAFKA_ADDR=127.0.0.1:9093 \
  QUEEN_KAFKA_ADVERTISED_ADDR=localhost:9093 QUEEN_KAFKA_HTTP_ADDR="$HTTP2" \
  "$BIN/queen-kafka" >"$work/facade-sasl.log" 2>&1 &
pids+=($!)
wait_listen peer-kafka-go "${pids[1]}" 127.0.0.1:9092 "the facade on 9092"
wait_listen peer-kafka-go "${pids[2]}" 127.0.0.1:9093 "the SASL facade on 9093"

echo "peer-kafka-go: running kafka-go's tests (about 10 minutes); processes' logs in $work"
set +e
(cd e2e && KAFKA_VERSION=4.0.0 go test -json -count=1 -p 1 -timeout 20m -skip "$SKIP" \
  github.com/segmentio/kafka-go/...) >"$LOG" 2>"$work/go-test.stderr"
set -e
for i in 0 1 2; do
  kill -0 "${pids[$i]}" 2>/dev/null || echo "peer-kafka-go: a process died during the run (logs: $work)" >&2
done

# Verdicts: "<action> <package> <test>" for every test and subtest.
verdicts=$(jq -r 'select(.Test != null and (.Action == "pass" or .Action == "fail" or .Action == "skip")) | "\(.Action) \(.Package) \(.Test)"' "$LOG")
report_counts peer-kafka-go "" "$verdicts"
bad=0
known=$(known_tests "$KNOWN")
check_failures peer-kafka-go "$verdicts" "$known" || bad=1
report_known_passes peer-kafka-go "$verdicts" "$known" "$KNOWN"
check_passes peer-kafka-go "$verdicts" < <(awk '!/^#/ && NF {print $1, $2}' "$PASSLIST") || bad=1
if grep -q 'panic: \|test timed out\|build failed' "$LOG"; then
  echo "peer-kafka-go: a package panicked, timed out or did not build: $LOG" >&2
  bad=1
fi
echo "peer-kafka-go: go test -json output in $LOG"
# A passing run drops queen-dev's data once the processes stop; the logs stay.
[ "$bad" -ne 0 ] || clean=1
exit "$bad"
