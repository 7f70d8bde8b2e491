#!/usr/bin/env bash
# `make run`: starts queen-dev and the facade on localhost in the foreground,
# prints the bootstrap address, and stops everything on Ctrl-C.
#
#   NODES=3 (default) starts a cluster of three facades on 9092-9094;
#   NODES=1 starts one single-mode facade on 9092 in embedded mode: one
#   queen-dev command that spawns and supervises bin/queen-kafka itself.
#
# Every port is checked before anything starts, so a port already taken
# (often an earlier `make run` still running) is one line naming the
# variable that moves it, and no banner. Ctrl-C is the normal way out: it
# stops every child and exits 0. Any other end (a child that dies, a child
# that never listens) exits non-zero, after stopping the rest.
set -euo pipefail

# A terminal's Ctrl-C signals its whole foreground process group, and make
# is in it: make dies of the signal (status 130, "*** Interrupt") whatever
# its recipe does. So when the script runs in a terminal's foreground, it
# runs itself again as a job of its own (bash's job control, set -m), which
# bash makes the terminal's foreground: Ctrl-C then reaches this script and
# its children only, and make exits with the script's status. (Elsewhere,
# as under a test or in a pipeline, it runs as it is: whoever signals it
# signals its process group.)
foreground_here() {
  local stat pgrp tpgid
  stat=$(cat "/proc/$$/stat" 2>/dev/null) || return 1
  # After "pid (comm) ": state ppid pgrp session tty_nr tpgid.
  read -r _ _ pgrp _ _ tpgid _ <<<"${stat##*) }"
  [ "$pgrp" = "$tpgid" ]
}
if [ -z "${RUN_SH_JOB:-}" ] && [ -t 0 ] && foreground_here; then
  set -m
  RUN_SH_JOB=1 "$0" "$@"
  exit
fi
unset RUN_SH_JOB
cd "$(dirname "$0")/.."

NODES=${NODES:-3}
QUEEN_DEV_ADDR=${QUEEN_DEV_ADDR:-127.0.0.1:6632}
QUEEN_DEV_DATA=${QUEEN_DEV_DATA:-$PWD/.queen-dev}
BASE_PORT=${BASE_PORT:-9092}
# Each facade's operator listener (/metrics, /healthz, /readyz, /debug/pprof/).
HTTP_BASE_PORT=${HTTP_BASE_PORT:-8080}
TOKEN=${QUEEN_TOKEN:-queen-kafka-dev}
# Where the binaries are: make's BIN (the tests point it at their own build).
BIN=${BIN:-bin}

# refuse: a one-line reason, before anything was started.
refuse() {
  echo "run: $*" >&2
  exit 2
}
is_uint() { case $1 in '' | *[!0-9]*) return 1 ;; esac }

# Each number is made decimal once checked (bash's arithmetic reads 08 as
# octal); a number too long for it fails the test and is refused.
is_uint "$NODES" && [ "$NODES" -ge 1 ] 2>/dev/null || refuse "NODES=$NODES: want the number of facades, 1 or more"
NODES=$((10#$NODES))
for v in BASE_PORT HTTP_BASE_PORT; do
  is_uint "${!v}" && [ "${!v}" -ge 1 ] 2>/dev/null && [ $((10#${!v} + NODES - 1)) -le 65535 ] ||
    refuse "$v=${!v}: want a port from 1 to $((65536 - NODES)) (node i listens on $v+i-1)"
  printf -v "$v" %d $((10#${!v}))
done
dev_host=${QUEEN_DEV_ADDR%:*} dev_port=${QUEEN_DEV_ADDR##*:}
[ "$dev_host" != "$QUEEN_DEV_ADDR" ] && is_uint "$dev_port" && [ "$dev_port" -le 65535 ] 2>/dev/null ||
  refuse "QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR: want host:port"
dev_port=$((10#$dev_port))
# The ranges must not overlap: a node would otherwise fail to bind a port
# that a sibling, or queen-dev, took first.
if [ "$BASE_PORT" -le $((HTTP_BASE_PORT + NODES - 1)) ] && [ "$HTTP_BASE_PORT" -le $((BASE_PORT + NODES - 1)) ]; then
  refuse "BASE_PORT=$BASE_PORT and HTTP_BASE_PORT=$HTTP_BASE_PORT: their $NODES ports each overlap; move one of them"
fi
for v in BASE_PORT HTTP_BASE_PORT; do
  if [ "$dev_port" -ge "${!v}" ] && [ "$dev_port" -le $((${!v} + NODES - 1)) ]; then
    refuse "QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR: its port is one of the nodes' ($v=${!v}); move one of them"
  fi
done
for b in queen-dev queen-kafka; do
  [ -x "$BIN/$b" ] || refuse "$BIN/$b is not built: start with make run, which builds it"
done

# accepts: something accepts connections on host port.
accepts() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# Every port the children will bind, checked before the first starts: a
# child that cannot bind would otherwise leave the others serving, and a
# readiness check would take the stranger on the port for the child.
busy=0
if accepts "$dev_host" "$dev_port"; then
  echo "run: port $dev_port is already in use (queen-dev, $QUEEN_DEV_ADDR): set QUEEN_DEV_ADDR to a free host:port" >&2
  busy=1
fi
for i in $(seq 1 "$NODES"); do
  port=$((BASE_PORT + i - 1)) http=$((HTTP_BASE_PORT + i - 1))
  if accepts 127.0.0.1 "$port"; then
    echo "run: port $port is already in use (Kafka listener of node $i): set BASE_PORT so that ports $BASE_PORT-$((BASE_PORT + NODES - 1)) are free" >&2
    busy=1
  fi
  if accepts 127.0.0.1 "$http"; then
    echo "run: port $http is already in use (operator listener of node $i): set HTTP_BASE_PORT so that ports $HTTP_BASE_PORT-$((HTTP_BASE_PORT + NODES - 1)) are free" >&2
    busy=1
  fi
done
[ "$busy" -eq 0 ] || exit 2

# The facades stop first and queen-dev last, so that each facade's stop can
# still delete its registry row (the hand-back that spares a restart the TTL
# wait). queen-dev runs in a session of its own, because a terminal's Ctrl-C
# signals the whole foreground process group at once.
dev_pid=
pids=()
stop() {
  # A second Ctrl-C while the children stop must not orphan queen-dev.
  trap '' INT TERM HUP
  trap - EXIT
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  gone "${pids[@]}"
  if [ -n "$dev_pid" ]; then
    kill -TERM "$dev_pid" 2>/dev/null || true
    gone "$dev_pid"
  fi
}
# gone: until none of its pids is alive (bash reaps its children as they
# end), then SIGKILL to any left after 30 s. Polled rather than waited for:
# bash 5.2's wait, called from a trap that had interrupted wait -n, was seen
# (under load) waiting forever for a child it had already reaped, with
# queen-dev never stopped.
gone() {
  local pid alive
  for _ in $(seq 1 300); do
    alive=
    for pid; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ -n "$alive" ] || return 0
    sleep 0.1
  done
  for pid; do kill -KILL "$pid" 2>/dev/null || true; done
}
# Ctrl-C (SIGINT) and SIGTERM are how a user stops it: a clean stop is a
# success. Any other way out keeps its status.
trap 'stop; exit 0' INT TERM
# A closed terminal is not a clean stop.
trap 'stop; exit 129' HUP
trap stop EXIT

# wait_listen: until host:port accepts, failing at once if pid (the child
# that should bind it) has exited, and after 20 s.
wait_listen() { # pid host:port name
  local pid=$1 host=${2%:*} port=${2##*:}
  for _ in $(seq 1 200); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "run: $3 exited before it listened on $2 (its log is above)" >&2
      return 1
    fi
    if accepts "$host" "$port"; then return 0; fi
    sleep 0.1
  done
  echo "run: $3 does not listen on $2 after 20 s (its log is above)" >&2
  return 1
}

bootstrap=()
ops=()
if [ "$NODES" -eq 1 ]; then
  # Embedded mode: queen-dev finds queen-kafka beside itself, wires it to
  # the address it bound, and stops it (SIGTERM, then SIGKILL after the
  # grace) when it stops itself.
  addr=127.0.0.1:$BASE_PORT
  QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$QUEEN_DEV_DATA QUEEN_TOKEN=$TOKEN \
    QUEEN_KAFKA_EMBEDDED=true QUEEN_KAFKA_ADDR=$addr QUEEN_KAFKA_ADVERTISED_ADDR=$addr \
    QUEEN_KAFKA_HTTP_ADDR=127.0.0.1:$HTTP_BASE_PORT \
    setsid "$BIN/queen-dev" &
  dev_pid=$!
  wait_listen "$dev_pid" "$QUEEN_DEV_ADDR" queen-dev
  # The facade is queen-dev's child: queen-dev is what must stay alive.
  wait_listen "$dev_pid" "$addr" "queen-dev (with its facade)"
  wait_listen "$dev_pid" "127.0.0.1:$HTTP_BASE_PORT" "queen-dev (with its facade)"
  bootstrap+=("$addr")
  ops+=("http://127.0.0.1:$HTTP_BASE_PORT")
else
  QUEEN_DEV_ADDR=$QUEEN_DEV_ADDR QUEEN_DEV_DATA=$QUEEN_DEV_DATA setsid "$BIN/queen-dev" &
  dev_pid=$!
  wait_listen "$dev_pid" "$QUEEN_DEV_ADDR" queen-dev
  names=()
  for i in $(seq 1 "$NODES"); do
    port=$((BASE_PORT + i - 1))
    addr=127.0.0.1:$port
    http=127.0.0.1:$((HTTP_BASE_PORT + i - 1))
    QUEEN_URL="http://$QUEEN_DEV_ADDR" QUEEN_TOKEN="$TOKEN" QUEEN_KAFKA_ADDR="$addr" QUEEN_KAFKA_ADVERTISED_ADDR="$addr" \
      QUEEN_KAFKA_HTTP_ADDR="$http" QUEEN_KAFKA_NODE_ID="$i" QUEEN_KAFKA_CLUSTER=queen "$BIN/queen-kafka" &
    pids+=($!)
    names+=("queen-kafka node $i")
    bootstrap+=("$addr")
    ops+=("http://$http")
  done
  for i in "${!pids[@]}"; do
    wait_listen "${pids[$i]}" "${bootstrap[$i]}" "${names[$i]}"
    wait_listen "${pids[$i]}" "${ops[$i]#http://}" "${names[$i]}"
  done
fi

list=$(IFS=,; echo "${bootstrap[*]}")
mode="a cluster of $NODES facades"
if [ "$NODES" -eq 1 ]; then
  mode="one facade, embedded in queen-dev (curl -s http://$QUEEN_DEV_ADDR/status shows its supervisor)"
fi
# The bootstrap line stands alone, exactly as a client's configuration
# takes it.
cat <<MSG

queen-dev (development broker, not Queen) on http://$QUEEN_DEV_ADDR, data in $QUEEN_DEV_DATA
$mode; operator listeners (/metrics /healthz /readyz /debug/pprof/): ${ops[*]}

bootstrap.servers=$list

  printf 'customer-123:{"orderId":8891}\n' | kcat -P -b $list -t orders -K:
  kcat -C -b $list -t orders -o beginning -e -q -f '%t [%p] offset %o key=%k %s\n'

Ctrl-C stops everything.
MSG

# Runs until Ctrl-C, or until a child ends on its own, which is a failure
# whatever its status. From here the traps only note the signal, and the
# stop runs below, outside the handler (see gone).
caught=
trap 'caught=0' INT TERM
trap 'caught=129' HUP
set +e
[ -n "$caught" ] || wait -n "$dev_pid" "${pids[@]}"
rc=$?
set -e
if [ -n "$caught" ]; then
  stop
  exit "$caught"
fi
echo "run: a process exited unexpectedly (status $rc); stopping the others" >&2
[ "$rc" -ne 0 ] || rc=1
exit "$rc"
