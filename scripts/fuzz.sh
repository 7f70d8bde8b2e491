#!/usr/bin/env bash
# Runs every Fuzz* target of both modules (the product's and e2e's, joined by
# go.work), each for a time (the short run of
# `make fuzz`, default 5s) or a count of executions (`make fuzz-long`,
# 10000000x). go test -fuzz takes one target of one package per run, so the
# targets are discovered here rather than listed by hand (a new target
# cannot be forgotten). A second argument, a regular expression, runs only
# the targets it matches. Each target's last progress line (its executions)
# is repeated in a summary at the end.
set -euo pipefail
fuzztime=${1:-5s}
only=${2:-.}
cd "$(dirname "$0")/.."
# A count of executions takes as long as it takes: no test timeout then.
# Nor Go's 60 s of minimizing each new interesting input: a target whose
# handlers wait (FuzzRequestBody's long polls and joins end at 200 ms)
# spent most of an hour minimizing (7.8 million executions in 56 minutes,
# under 400 a second at the end); 5 s keeps the count's hours for fuzzing.
timeout=10m
minimize=60s
case $fuzztime in *x) timeout=0 minimize=5s ;; esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT
found=0
flakes=0
summary=()
while IFS= read -r pkg; do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for t in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort -u); do
    [[ $t =~ $only ]] || continue
    found=$((found + 1))
    echo "fuzz $pkg $t ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" -fuzzminimizetime "$minimize" -timeout "$timeout" "$pkg" 2>&1 | tee "$log"; then
      # Go 1.26's fuzz coordinator can report a bare "context deadline
      # exceeded" when -fuzztime ends while a starved worker is mid-call
      # (golang/go#75804, fixed in Go 1.27): no input failed and none was
      # written. Only that exact shape is forgiven, and only once the
      # target's corpus replays clean; anything else fails the run.
      if grep -q 'context deadline exceeded' "$log" && ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$log" &&
        go test -count=1 -run "^${t}\$" "$pkg" >/dev/null 2>&1; then
        echo "fuzz: $t: the fuzz coordinator's deadline race (golang/go#75804), no failing input; corpus replay passed"
        flakes=$((flakes + 1))
      else
        exit 1
      fi
    fi
    # A run that ends inside its baseline (the corpus alone) prints no count.
    summary+=("$t: $(grep -oE 'elapsed: [^,]+, execs: [0-9]+' "$log" | tail -1 || true)")
  done
done < <(go list ./... ./e2e/...)
printf '%s\n' "${summary[@]}"
echo "fuzz: $found targets ran ($flakes forgiven deadline races)"
