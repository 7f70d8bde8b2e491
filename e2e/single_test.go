package e2e

import (
	"testing"
)

// target is everything a test body knows about the system under test: the
// Kafka bootstrap list and the Queen behind it. Bodies take it as a
// parameter so that the same assertions run against one single-mode facade
// (here) and, unchanged, against a cluster of facades.
type target struct {
	bootstrap []string
	dev       *queenDev
}

// TestSingleNode runs the data-path and group bodies against the shared
// single-mode facade.
func TestSingleNode(t *testing.T) {
	dev, fac := sharedEnv(t)
	runBodies(t, target{bootstrap: []string{fac.addr}, dev: dev})
}

// runBodies is the suite a facade deployment must pass, whatever its shape.
// Every body makes its own topics and groups, so they run in parallel.
func runBodies(t *testing.T, tg target) {
	t.Run("data", func(t *testing.T) {
		t.Run("codecs", func(t *testing.T) { t.Parallel(); testCodecs(t, tg) })
		t.Run("envelope", func(t *testing.T) { t.Parallel(); testEnvelopeThroughFetchRoute(t, tg) })
		t.Run("native-push", func(t *testing.T) { t.Parallel(); testNativePushReadByKafka(t, tg) })
		t.Run("idempotent-default", func(t *testing.T) { t.Parallel(); testIdempotentDefault(t, tg) })
		t.Run("retried-batch", func(t *testing.T) { t.Parallel(); testRetriedBatch(t, tg) })
		t.Run("admin", func(t *testing.T) { t.Parallel(); testAdmin(t, tg) })
		t.Run("list-offsets", func(t *testing.T) { t.Parallel(); testListOffsets(t, tg) })
		t.Run("metadata", func(t *testing.T) { t.Parallel(); testMetadata(t, tg) })
		t.Run("kcat-codecs", func(t *testing.T) { t.Parallel(); testKcatCodecs(t, tg) })
		t.Run("edges", func(t *testing.T) { t.Parallel(); testEdges(t, tg) })
	})
	t.Run("groups", func(t *testing.T) {
		t.Run("kgo-balancers", func(t *testing.T) { t.Parallel(); testGroupBalancers(t, tg) })
		t.Run("rebalance-join-leave", func(t *testing.T) { t.Parallel(); testGroupJoinLeave(t, tg) })
		t.Run("eviction", func(t *testing.T) { t.Parallel(); testGroupEviction(t, tg) })
		t.Run("consumer-restart", func(t *testing.T) { t.Parallel(); testGroupConsumerRestart(t, tg) })
		t.Run("sarama", func(t *testing.T) { t.Parallel(); testGroupSarama(t, tg) })
		t.Run("kafka-go", func(t *testing.T) { t.Parallel(); testGroupKafkaGo(t, tg) })
		t.Run("kafka-go-split", func(t *testing.T) { t.Parallel(); testGroupKafkaGoSplit(t, tg) })
		t.Run("kcat", func(t *testing.T) { t.Parallel(); testGroupKcat(t, tg) })
		t.Run("admin", func(t *testing.T) { t.Parallel(); testGroupAdmin(t, tg) })
		t.Run("static", func(t *testing.T) { t.Parallel(); testGroupStatic(t, tg) })
		t.Run("static-librdkafka", func(t *testing.T) { t.Parallel(); testGroupStaticLibrdkafka(t, tg) })
	})
}
