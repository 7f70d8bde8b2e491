#!/usr/bin/env bash
# `make peer-confluent-kafka-go`: confluent-kafka-go's own test suite (its
# kafka/ package, at the version e2e/go.mod requires, librdkafka bundled,
# cgo) against the facade.
#
# The package's integration tests read kafka/testconf.json (brokers, SASL
# brokers and credentials, topic, group) and skip without it; the broker
# they were written for is the docker-compose one of kafka/testresources:
# one broker with id 0, a PLAINTEXT listener, and a SASL/PLAIN broker of its
# own (user testuser, password testpass). What this script starts, on a
# fresh data directory, refusing to start when a port is taken:
#   - queen-dev on QUEEN_DEV_ADDR (127.0.0.1:16642), two tenants;
#   - a facade in single mode (node 0, their broker's id) on
#     127.0.0.1:19092, num.partitions 1 (Kafka's default, which their
#     broker keeps) and no initial rebalance delay;
#   - a facade in single mode with SASL/PLAIN on 127.0.0.1:19093, in a
#     tenant of its own (the password testpass is its Queen token).
# The module's kafka/ is copied out of the module cache into bin/ with a
# go.mod of its own that requires only what kafka/'s tests import, at the
# versions e2e selects (so the build is offline); their one import e2e
# does not have, testcontainers-go's docker compose module (used only when
# -docker.needed is given, never here), is replaced by a stand-in written
# below whose Invoke fails. testconf.json is written into the copy, the
# topic it names is created through the facade, and the package's tests
# run with go test -json once per group protocol (TEST_CONSUMER_GROUP_PROTOCOL,
# which the suite reads: classic, then consumer, KIP-848 in librdkafka
# 2.6.1's early access), on the same processes. One subtest is skipped:
# TestIntegration/TestProducerFuncDR waits forever for a delivery report
# of a message its Produce refused at once (class d in the known list,
# where TestProducerFunc, its twin without reports, fails), which would end
# the run at its timeout. Every "<protocol> <test>" that
# scripts/peer-confluent-kafka-go.pass names must pass; a test may fail
# only if scripts/peer-confluent-kafka-go.known names it (each with its
# class and reason: docs/testing.md's triage table), and a known one that
# passes is reported.
#
# PEER_LOG=<prefix> keeps the go test -json output in <prefix>.<protocol>
# (default: in a temp directory, named at the end). PEER_PROTOCOLS picks the
# protocols ("classic consumer"); PEER_RUN=<regexp> runs only those tests
# (the lists are then not checked).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BIN=${BIN:-bin}
QUEEN_DEV_ADDR=${QUEEN_DEV_ADDR:-127.0.0.1:16642}
PLAIN=${PLAIN:-127.0.0.1:19092}
SASL=${SASL:-127.0.0.1:19093}
PASSLIST=scripts/peer-confluent-kafka-go.pass
KNOWN=scripts/peer-confluent-kafka-go.known
MODULE=github.com/confluentinc/confluent-kafka-go/v2
SKIP='^TestIntegration$/^TestProducerFuncDR$'
PROTOCOLS=${PEER_PROTOCOLS:-classic consumer}
# shellcheck source=scripts/peer-lib.sh
. scripts/peer-lib.sh

need_built peer-confluent-kafka-go
refuse_busy peer-confluent-kafka-go "PLAIN, SASL and QUEEN_DEV_ADDR move them" "$PLAIN" "$SASL" "$QUEEN_DEV_ADDR"

read -r src version < <(cd e2e && go list -m -f '{{.Dir}} {{.Version}}' "$MODULE")
[ -n "$src" ] || { echo "peer-confluent-kafka-go: $MODULE is not in the module cache (go mod download in e2e/)" >&2; exit 2; }
testify=$(cd e2e && go list -m -f '{{.Version}}' github.com/stretchr/testify)

work=$(mktemp -d)
LOG=${PEER_LOG:-$work/confluent-kafka-go}
pids=()
stop() { stop_pids "${pids[@]}"; }
peer_trap

# The copy: kafka/ alone, writable, its own go.mod, in bin/ at a fixed path
# (cgo names the package's directory: a new one each run would miss the
# build cache and rebuild librdkafka's glue).
ckg=$(cd "$BIN" && pwd)/confluent-kafka-go@$version
rm -rf "$ckg"
mkdir -p "$ckg/compose"
cp -r "$src/kafka" "$ckg/"
chmod -R u+w "$ckg"
cat >"$ckg/go.mod" <<EOF
module $MODULE

go 1.21

require (
	github.com/stretchr/testify $testify
	github.com/testcontainers/testcontainers-go/modules/compose v0.0.0
)

replace github.com/testcontainers/testcontainers-go/modules/compose => ./compose
EOF
cp e2e/go.sum "$ckg/go.sum"
cat >"$ckg/compose/go.mod" <<'EOF'
module github.com/testcontainers/testcontainers-go/modules/compose

go 1.21
EOF
cat >"$ckg/compose/compose.go" <<'EOF'
// Package compose stands in for testcontainers-go's: the suite runs against
// the brokers testconf.json names, and never brings up docker compose.
package compose

import "errors"

type ExecError struct{ Error error }

type LocalDockerCompose struct{}

func NewLocalDockerCompose(files []string, identifier string) *LocalDockerCompose {
	return &LocalDockerCompose{}
}

func (c *LocalDockerCompose) WithCommand(cmd []string) *LocalDockerCompose { return c }

func (c *LocalDockerCompose) Invoke() ExecError {
	return ExecError{Error: errors.New("docker compose is not available: give testconf.json")}
}

func (c *LocalDockerCompose) Down() ExecError { return ExecError{} }
EOF
# A command that creates the suite's topic through the facade.
mkdir -p "$ckg/mktopic"
cat >"$ckg/mktopic/main.go" <<'EOF'
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

func main() {
	a, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": os.Args[1]})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := a.CreateTopics(ctx, []kafka.TopicSpecification{{Topic: os.Args[2], NumPartitions: 1, ReplicationFactor: 1}})
	if err == nil && res[0].Error.Code() != kafka.ErrNoError {
		err = res[0].Error
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
EOF
cat >"$ckg/kafka/testconf.json" <<EOF
{
    "Brokers": "$PLAIN",
    "BrokersSasl": "$SASL",
    "SaslUsername": "testuser",
    "SaslPassword": "testpass",
    "SaslMechanism": "PLAIN",
    "TopicName": "test",
    "GroupID": "testgroup",
    "PerfMsgCount": 100000,
    "PerfMsgSize": 100,
    "Config": ["api.version.request=true"]
}
EOF
offline=(GOWORK=off GOPROXY=off GOFLAGS=-mod=mod)
echo "peer-confluent-kafka-go: building the copy's kafka/ tests (librdkafka, cgo: a few minutes the first time)"
(cd "$ckg" && env "${offline[@]}" go mod tidy &&
  env "${offline[@]}" go build -trimpath -o "$work/mktopic" ./mktopic &&
  env "${offline[@]}" go test -trimpath -run '^$' ./kafka) >"$work/build.log" 2>&1 ||
  { cat "$work/build.log" >&2; exit 2; }

QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$work/data QUEEN_DEV_TOKENS="queen-kafka-dev=local,testpass=sasl" \
  "$BIN/queen-dev" >"$work/queen-dev.log" 2>&1 &
pids=($!)
wait_listen peer-confluent-kafka-go "${pids[0]}" "$QUEEN_DEV_ADDR" queen-dev
common=(QUEEN_URL="http://$QUEEN_DEV_ADDR" QUEEN_KAFKA_DEFAULT_PARTITIONS=1 QUEEN_KAFKA_GROUP_JOIN_DELAY_MS=0)
env "${common[@]}" QUEEN_TOKEN=queen-kafka-dev QUEEN_KAFKA_ADDR="$PLAIN" QUEEN_KAFKA_ADVERTISED_ADDR="$PLAIN" \
  "$BIN/queen-kafka" >"$work/facade.log" 2>&1 &
pids+=($!)
env "${common[@]}" QUEEN_TOKEN=testpass QUEEN_KAFKA_SASL=plain QUEEN_KAFKA_ADDR="$SASL" QUEEN_KAFKA_ADVERTISED_ADDR="$SASL" \
  "$BIN/queen-kafka" >"$work/facade-sasl.log" 2>&1 &
pids+=($!)
wait_listen peer-confluent-kafka-go "${pids[1]}" "$PLAIN" "the facade on $PLAIN"
wait_listen peer-confluent-kafka-go "${pids[2]}" "$SASL" "the SASL facade on $SASL"
"$work/mktopic" "$PLAIN" test

echo "peer-confluent-kafka-go: running confluent-kafka-go's kafka/ tests once per group protocol ($PROTOCOLS, about 4 minutes each); processes' logs in $work"
run=()
[ -z "${PEER_RUN:-}" ] || run=(-run "$PEER_RUN")
verdicts=""
for proto in $PROTOCOLS; do
  log=$LOG.$proto
  set +e
  (cd "$ckg" && env "${offline[@]}" TEST_CONSUMER_GROUP_PROTOCOL="$proto" \
    go test -trimpath -json -count=1 -timeout 30m -skip "$SKIP" "${run[@]}" ./kafka) >"$log" 2>"$work/go-test.$proto.stderr"
  set -e
  if grep -q 'panic: \|test timed out\|build failed' "$log"; then
    echo "peer-confluent-kafka-go: the $proto run panicked, timed out or did not build: $log" >&2
    verdicts+=$'\n'"fail $proto (run)"
  fi
  # Verdicts: "<action> <protocol> <test>" for every test and subtest.
  verdicts+=$'\n'$(jq -r --arg p "$proto" 'select(.Test != null and (.Action == "pass" or .Action == "fail" or .Action == "skip")) | "\(.Action) \($p) \(.Test)"' "$log")
done
for i in 0 1 2; do
  kill -0 "${pids[$i]}" 2>/dev/null || echo "peer-confluent-kafka-go: a process died during the run (logs: $work)" >&2
done

verdicts=$(grep . <<<"$verdicts" || true)
for proto in $PROTOCOLS; do
  report_counts peer-confluent-kafka-go "$proto: " "$(grep "^[a-z]* $proto " <<<"$verdicts" || true)"
done
if [ -n "${PEER_RUN:-}" ]; then
  echo "peer-confluent-kafka-go: PEER_RUN given, lists not checked; go test -json output in $LOG.<protocol>"
  exit 0
fi
bad=0
# A known failure is known under every protocol.
known=$(known_tests "$KNOWN")
check_failures peer-confluent-kafka-go "$verdicts" "$known" || bad=1
while read -r test; do
  [ -n "$test" ] || continue
  for proto in $PROTOCOLS; do
    if grep -qxF "pass $proto $test" <<<"$verdicts"; then
      echo "peer-confluent-kafka-go: known failure passed in this run: $proto $test (if it always does, drop it from $KNOWN)"
    fi
  done
done <<<"$known"
check_passes peer-confluent-kafka-go "$verdicts" \
  < <(awk -v p=" $PROTOCOLS " '!/^#/ && NF >= 2 && index(p, " " $1 " ") {print $1, $2}' "$PASSLIST") || bad=1
echo "peer-confluent-kafka-go: go test -json output in $LOG.<protocol>"
# A passing run drops queen-dev's data once the processes stop; the logs stay.
[ "$bad" -ne 0 ] || clean=1
exit "$bad"
