#!/usr/bin/env bash
# `make run`: starts queen-dev and the facade on localhost in the foreground,
# prints the bootstrap address, and stops everything on Ctrl-C.
#
#   NODES=3 (default) starts a cluster of three facades on 9092-9094;
#   NODES=1 starts one single-mode facade on 9092 in embedded mode: one
#   queen-dev command that spawns and supervises bin/queen-kafka itself.
set -euo pipefail
cd "$(dirname "$0")/.."

NODES=${NODES:-3}
QUEEN_DEV_ADDR=${QUEEN_DEV_ADDR:-127.0.0.1:6632}
QUEEN_DEV_DATA=${QUEEN_DEV_DATA:-$PWD/.queen-dev}
BASE_PORT=${BASE_PORT:-9092}
# Each facade's operator listener (/metrics, /healthz, /readyz, /debug/pprof/).
HTTP_BASE_PORT=${HTTP_BASE_PORT:-8080}
TOKEN=${QUEEN_TOKEN:-queen-kafka-dev}

# The facades stop first and queen-dev last, so that each facade's stop can
# still delete its registry row (the hand-back that spares a restart the TTL
# wait). queen-dev runs in a session of its own, because a terminal's Ctrl-C
# signals the whole foreground process group at once.
dev_pid=
pids=()
stop() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  if [ -n "$dev_pid" ]; then
    kill -TERM "$dev_pid" 2>/dev/null || true
    wait "$dev_pid" 2>/dev/null || true
  fi
}
trap stop INT TERM EXIT

wait_port() { # host:port
  local host=${1%:*} port=${1##*:}
  for _ in $(seq 1 100); do
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "run: nothing listens on $1" >&2
  return 1
}

bootstrap=()
ops=()
if [ "$NODES" -eq 1 ]; then
  # Embedded mode: queen-dev finds bin/queen-kafka beside itself, wires it to
  # the address it bound, and stops it (SIGTERM, then SIGKILL after the
  # grace) when it stops itself.
  addr=127.0.0.1:$BASE_PORT
  QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$QUEEN_DEV_DATA QUEEN_TOKEN=$TOKEN \
    QUEEN_KAFKA_EMBEDDED=true QUEEN_KAFKA_ADDR=$addr QUEEN_KAFKA_ADVERTISED_ADDR=$addr \
    QUEEN_KAFKA_HTTP_ADDR=127.0.0.1:$HTTP_BASE_PORT \
    setsid ./bin/queen-dev &
  dev_pid=$!
  wait_port "$QUEEN_DEV_ADDR"
  bootstrap+=("$addr")
  ops+=("http://127.0.0.1:$HTTP_BASE_PORT")
else
  QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$QUEEN_DEV_DATA setsid ./bin/queen-dev &
  dev_pid=$!
  wait_port "$QUEEN_DEV_ADDR"
  for i in $(seq 1 "$NODES"); do
    port=$((BASE_PORT + i - 1))
    addr=127.0.0.1:$port
    http=127.0.0.1:$((HTTP_BASE_PORT + i - 1))
    QUEEN_URL="http://$QUEEN_DEV_ADDR" QUEEN_TOKEN="$TOKEN" QUEEN_KAFKA_ADDR="$addr" QUEEN_KAFKA_ADVERTISED_ADDR="$addr" \
      QUEEN_KAFKA_HTTP_ADDR="$http" QUEEN_KAFKA_NODE_ID="$i" QUEEN_KAFKA_CLUSTER=queen ./bin/queen-kafka &
    pids+=($!)
    bootstrap+=("$addr")
    ops+=("http://$http")
  done
fi
for addr in "${bootstrap[@]}"; do wait_port "$addr"; done

list=$(IFS=,; echo "${bootstrap[*]}")
mode="a cluster of $NODES facades"
if [ "$NODES" -eq 1 ]; then
  mode="one facade, embedded: curl -s http://$QUEEN_DEV_ADDR/status shows its supervisor"
fi
cat <<MSG

queen-dev (development broker, not Queen) on http://$QUEEN_DEV_ADDR, data in $QUEEN_DEV_DATA
bootstrap.servers=$list ($mode)
operator listeners (/metrics /healthz /readyz /debug/pprof/): ${ops[*]}

  printf 'customer-123:{"orderId":8891}\n' | kcat -P -b $list -t orders -K:
  kcat -C -b $list -t orders -o beginning -e -q -f '%t [%p] offset %o key=%k %s\n'

Ctrl-C stops everything.
MSG
wait -n "$dev_pid" "${pids[@]}"
