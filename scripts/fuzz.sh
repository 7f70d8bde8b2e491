#!/usr/bin/env bash
# Runs every Fuzz* target of the module for a short time each. go test -fuzz
# takes one target of one package per run, so the targets are discovered here
# rather than listed by hand (a new target cannot be forgotten).
set -euo pipefail
fuzztime=${1:-5s}
cd "$(dirname "$0")/.."
found=0
while IFS= read -r pkg; do
  dir=$(go list -f '{{.Dir}}' "$pkg")
  for t in $(grep -hoE '^func (Fuzz[A-Za-z0-9_]+)\(' "$dir"/*_test.go 2>/dev/null | sed -E 's/^func (Fuzz[A-Za-z0-9_]+)\(/\1/' | sort -u); do
    found=$((found + 1))
    echo "fuzz $pkg $t ($fuzztime)"
    go test -run '^$' -fuzz "^${t}\$" -fuzztime "$fuzztime" "$pkg"
  done
done < <(go list ./...)
echo "fuzz: $found targets ran"
