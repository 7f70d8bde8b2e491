# shellcheck shell=bash
# Shell helpers the peer-suite scripts (peer-kafka-go.sh, peer-sarama.sh,
# peer-confluent-kafka-go.sh) share; each sources this file from the
# repository root. Functions that write a message take the script's name
# (NAME) first. Provided:
#   need_built NAME                   $BIN/queen-dev, $BIN/queen-kafka and jq, or exit 2
#   accepts HOST PORT                 something accepts a connection there
#   refuse_busy NAME HINT ADDR...     exit 2 when any host:port is taken
#   wait_listen NAME PID ADDR WHAT [TRIES]  until PID listens on ADDR (TRIES x 0.1 s, 200)
#   stop_pid PID, stop_pids PID...    SIGTERM, then SIGKILL after 10 s
#   peer_trap                         the EXIT trap: the script's `stop`, then peer_tidy
#                                     (a no-op unless the script redefines it), then
#                                     $work/data goes once the script set clean=1
#   report_counts NAME LABEL VERDICTS the pass/fail/skip line
#   check_failures NAME VERDICTS KNOWN     every failure is a known one
#   report_known_passes NAME VERDICTS KNOWN FILE  known failures that passed
#   check_passes NAME VERDICTS <KEYS  every key (one a line) passed
# VERDICTS is one "<action> <key>" a line, action pass, fail or skip, the
# key ending in the test's name (it never holds a space); KNOWN is the
# known-failure test names, one a line (known_tests FILE reads them).
# Messages naming the processes' logs point at $work.

need_built() {
  local b
  for b in queen-dev queen-kafka; do
    [ -x "$BIN/$b" ] || { echo "$1: $BIN/$b is not built (make build)" >&2; exit 2; }
  done
  command -v jq >/dev/null || { echo "$1: needs jq" >&2; exit 2; }
}

accepts() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

refuse_busy() {
  local name=$1 hint=$2 a busy=0
  shift 2
  for a in "$@"; do
    if accepts "${a%:*}" "${a##*:}"; then
      echo "$name: $a is already in use ($hint)" >&2
      busy=1
    fi
  done
  [ "$busy" -eq 0 ] || exit 2
}

wait_listen() {
  for _ in $(seq 1 "${5:-200}"); do
    kill -0 "$2" 2>/dev/null || { echo "$1: $4 exited (log: $work)" >&2; return 1; }
    accepts "${3%:*}" "${3##*:}" && return 0
    sleep 0.1
  done
  echo "$1: $4 does not listen on $3 (log: $work)" >&2
  return 1
}

stop_pid() {
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null || true
}

# stop_pids: all get SIGTERM at once, then each is waited for in turn.
stop_pids() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

peer_tidy() { :; }

peer_trap() {
  clean=0
  trap 'stop; peer_tidy; if [ "$clean" = 1 ]; then rm -rf "$work/data"; fi' EXIT
}

report_counts() {
  local v=$3
  count() { grep -c "^$1 " <<<"$v" || true; }
  top() { grep "^$1 " <<<"$v" | awk '$NF !~ /\//' | wc -l; }
  echo "$1: $2pass $(count pass) fail $(count fail) skip $(count skip) (tests and subtests; top-level: pass $(top pass) fail $(top fail) skip $(top skip))"
}

known_tests() { awk '!/^#/ && NF {print $1}' "$1"; }

check_failures() {
  local key bad=0
  while read -r _ key; do
    [ -n "$key" ] || continue
    if ! grep -qxF "${key##* }" <<<"$3"; then
      echo "$1: FAILED, not a known failure: $key" >&2
      bad=1
    fi
  done < <(grep '^fail ' <<<"$2" || true)
  return "$bad"
}

report_known_passes() {
  local test
  while read -r test; do
    [ -n "$test" ] || continue
    if awk -v t="$test" '$1 == "pass" && $NF == t {found = 1} END {exit !found}' <<<"$2"; then
      echo "$1: known failure now passes: $test (drop it from $4)"
    fi
  done <<<"$3"
}

check_passes() {
  local key bad=0
  while read -r key; do
    [ -n "$key" ] || continue
    if ! grep -qxF "pass $key" <<<"$2"; then
      echo "$1: expected to pass, did not: $key" >&2
      bad=1
    fi
  done
  return "$bad"
}
