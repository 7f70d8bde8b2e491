# queen-kafka: a Kafka wire-protocol facade for Queen MQ.
GO       ?= go
BIN      ?= bin
GOFLAGS  ?=
FUZZTIME ?= 5s
FUZZEXECS ?= 10000000
FUZZ     ?= .
# The build's version: --version, the boot line, the registry row and
# queen_kafka_build_info carry it. Without git (a source tarball) it is "dev".
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/queen-mq/queen-kafka/internal/version.version=$(VERSION)
# Two modules joined by go.work: the product at the root, the tests and every
# test-only client (sarama, confluent-kafka-go, kafka-go, kfake, kadm,
# k8s.io/api) in e2e/. From the root, ./... is the product's packages and
# ./e2e/... the test module's; UNIT is every package but the e2e suite itself.
MODULES  := . ./e2e
ALL      := ./... ./e2e/...
UNIT      = $$($(GO) list $(ALL) | grep -v '/e2e$$')

.PHONY: all build run test unit e2e test-js peer-kafka-go peer-sarama peer-confluent-kafka-go chaos-short chaos chaos-txn-short chaos-txn soak fuzz fuzz-long vet fmt-check tidy-check lint bench clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/ ./cmd/...

# Starts queen-dev and the facade on localhost and prints the bootstrap address.
run: build
	@BIN=$(BIN) exec ./scripts/run.sh

# Everything: formatting, tidy modules, vet, staticcheck, unit tests, e2e with
# real clients, the short chaos runs (idempotent and transactional), fuzz smoke.
test: fmt-check tidy-check vet lint unit e2e chaos-short chaos-txn-short fuzz

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Each module's go.mod and go.sum must be what `go mod tidy` makes of its
# imports. In e2e/go.mod, k8s.io/api stays at v0.29.2 (only e2e/k8s's
# manifest test uses it) because confluent-kafka-go's own tests reach,
# through testcontainers and docker/buildx, k8s.io/api packages later
# releases dropped; a newer one makes go mod tidy refuse the whole graph.
# The product module must name none of the test-only clients, and the
# workspace must build the product's packages (and their tests) with the
# very module versions the product module selects alone (GOWORK=off, as the
# image and a user build it): the tests test what ships.
tidy-check:
	@for m in $(MODULES); do (cd $$m && $(GO) mod tidy -diff) || { echo "$$m: go.mod/go.sum are not tidy: run go mod tidy in $$m"; exit 1; }; done
	@if GOWORK=off $(GO) list -m all | grep -E 'IBM/sarama|confluent-kafka-go|segmentio/kafka-go|franz-go/pkg/(kfake|kadm)|k8s\.io/|sigs\.k8s\.io/'; then echo "the product module requires a test-only client (above): it belongs in e2e/go.mod"; exit 1; fi
	@mods='{{with .Module}}{{.Path}} {{.Version}}{{end}}'; \
	  solo=$$(GOWORK=off $(GO) list -deps -test -f "$$mods" ./... | sort -u); \
	  work=$$($(GO) list -deps -test -f "$$mods" ./... | sort -u); \
	  [ "$$solo" = "$$work" ] || { printf 'go.work selects other versions for the product than its go.mod does.\nalone:\n%s\nin the workspace:\n%s\n' "$$solo" "$$work"; exit 1; }

# staticcheck is pinned in the product's go.mod as a tool (config:
# staticcheck.conf); the workspace makes it run over both modules.
lint:
	$(GO) tool staticcheck $(ALL)

vet:
	$(GO) vet $(ALL)

unit:
	$(GO) test -count=1 -timeout 10m $(UNIT)

e2e: build
	$(GO) test -count=1 -timeout 15m ./e2e/

# @platformatic/kafka 1.35.0 (Node.js, modern protocol versions only) runs
# e2e/js/scenario.mjs against a single facade and a 3-node cluster (build
# tag jsclients). Needs node and npm; the first run does `npm ci` in e2e/js,
# which needs the npm registry, so it is not part of `make test`.
test-js: build
	$(GO) test -tags jsclients -count=1 -timeout 10m -run 'TestPlatformaticKafka' -v ./e2e/

# segmentio/kafka-go's own test suite (every package of the module e2e
# requires, about 10 minutes) against a facade this target starts on
# localhost:9092 and a SASL/PLAIN one on :9093, the addresses kafka-go's
# tests dial (so it is not part of `make test`, and needs those ports
# free). Every test in scripts/peer-kafka-go.pass must pass and only the
# ones scripts/peer-kafka-go.known names may fail (docs/testing.md).
peer-kafka-go: build
	@BIN=$(BIN) ./scripts/peer-kafka-go.sh

# IBM/sarama's own functional tests (its functional_*_test.go, build tag
# functional, at the version e2e requires; about 5 minutes) against a cluster
# of five facades (ids 1-5 on 19101-19105) behind toxiproxy (built from the
# Go module proxy at run time, its API on 19199) on 127.0.0.1:29091-29095,
# the addresses sarama's suite hard-codes (so it is not part of `make test`,
# and needs those ports free). Every test in scripts/peer-sarama.pass must
# pass and only the ones scripts/peer-sarama.known names may fail
# (docs/testing.md).
peer-sarama: build
	@BIN=$(BIN) ./scripts/peer-sarama.sh

# confluent-kafka-go's own test suite (its kafka/ package at the version e2e
# requires, librdkafka bundled, cgo) against a facade this target starts on
# 127.0.0.1:19092 and a SASL/PLAIN one on :19093, through the testconf.json
# the suite reads (so it is not part of `make test`). Every test in
# scripts/peer-confluent-kafka-go.pass must pass and only the ones
# scripts/peer-confluent-kafka-go.known names may fail (docs/testing.md).
peer-confluent-kafka-go: build
	@BIN=$(BIN) ./scripts/peer-confluent-kafka-go.sh

# The chaos test (issue 11, e2e/chaos_test.go, build tag chaos). Its short
# form, 4 facade SIGKILLs and 1 queen-dev SIGKILL+restart over 35 s (about
# a minute in all), is part of `make test`; `make chaos` is the long one, 20
# facade SIGKILLs and 2 queen-dev SIGKILL+restarts over 7 minutes.
# CHAOS_SEED=<the seed a run logged> repeats a run's nemesis.
chaos-short: build
	$(GO) test -tags chaos -count=1 -timeout 5m -run 'TestChaos$$' -v ./e2e/

chaos: build
	CHAOS_KILLS=20 CHAOS_QUEEN_RESTARTS=2 CHAOS_TIME=7m $(GO) test -tags chaos -count=1 -timeout 20m -run 'TestChaos$$' -v ./e2e/

# The transactional checker (issue 23, e2e/chaos_txn_test.go, build tag
# chaos; docs/testing.md): franz-go and librdkafka consume-transform-produce
# workers on a 3-node cluster under facade SIGKILLs, queen-dev restarts,
# client restarts and EndTxns held past the client's timeout, then Jepsen's
# classes (lost write, aborted read, torn transaction, duplicate, offsets
# inconsistent with the outputs, nonmonotonic poll) must all be 0. Its short
# form (4 kills, 1 queen-dev restart, 2 client restarts, 4 delayed EndTxns
# over 35 s, plus the deterministic late-EndTxn case; about 2 minutes) is
# part of `make test`; `make chaos-txn` is the long one. A failing run keeps
# the librdkafka workers' debug logs and prints their offset resets.
# CHAOS_SEED=<the seed a run logged> repeats a run's nemesis.
# E2E_SRC=<an exported tree> runs the tests against that tree's binaries
# (the late-EndTxn case against a build without the defense: docs/testing.md).
chaos-txn-short: build
	$(GO) test -tags chaos -count=1 -timeout 5m -run 'TestChaosTxn$$|TestChaosTxnLateEndTxn' -v ./e2e/

chaos-txn: build
	CHAOS_KILLS=20 CHAOS_QUEEN_RESTARTS=2 CHAOS_CLIENT_RESTARTS=6 CHAOS_DELAYS=60 CHAOS_TIME=7m $(GO) test -tags chaos -count=1 -timeout 20m -run 'TestChaosTxn$$' -v ./e2e/

# The soak (issue 20, e2e/soak_test.go, build tag soak): a mixed workload on
# a 3-node cluster for SOAK_TIME, failing on growth of a facade's RSS or
# goroutines after the warm-up, a panic, or a lost or duplicated record.
# Not part of `make test`. SOAK_TIME=3m make soak is a short run.
SOAK_TIME ?= 30m
soak: build
	SOAK_TIME=$(SOAK_TIME) $(GO) test -tags soak -count=1 -run TestSoak -timeout 45m -v ./e2e/

# Short runs of every fuzz target over its checked-in corpus plus fresh inputs.
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# Every fuzz target for FUZZEXECS executions each (issue 11: at least ten
# million); hours, not part of `make test`. FUZZ=<regexp> picks targets.
fuzz-long:
	./scripts/fuzz.sh $(FUZZEXECS)x $(FUZZ)

# Unit-level benchmarks run for a time each; the e2e ones start real
# processes and compare facade and direct paths inside one iteration, so they
# run once (-benchtime 1x) and report min/median/max over their own rounds.
# BenchmarkQueenDevStored generates QK_BENCH_STORED (default 1GB) of data for
# queen-dev's memory and boot figures; QK_BENCH_STORED=10GB for issue 24's.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s -timeout 20m $(UNIT)
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m ./e2e/

clean:
	rm -rf $(BIN) .queen-dev
