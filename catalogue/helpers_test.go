package catalogue

import (
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// testQueen is a dev broker whose recorder counts the calls per route and
// may answer one itself (a synthetic failure, or a gate).
type testQueen struct {
	*devbroker.Recorder
	t *testing.T
	q *queen.Client
}

// newTestCatalogues is a node's catalogues (QUEEN_KAFKA_DEFAULT_PARTITIONS
// 4, single mode) over a fresh dev broker.
func newTestCatalogues(t *testing.T) (*Catalogues, *testQueen) {
	t.Helper()
	tq := &testQueen{Recorder: devbroker.NewRecorder(), t: t}
	b := devbroker.Start(t, dev.Options{}, tq.Wrap)
	tq.q = b.Client
	return New(Deps{DefaultPartitions: 4, Now: time.Now, Queen: b.Client}), tq
}

// withClock drives the catalogues' TTL from a fake clock.
func withClock(cs *Catalogues) *testsupport.FakeClock {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	cs.SetClock(clk.Now)
	return clk
}

// addQueue creates a queue natively, its partitions 0..partitions-1
// made by one message each, and returns the queue's id.
func (tq *testQueen) addQueue(name string, partitions int) string {
	tq.t.Helper()
	return devbroker.AddQueue(tq.t, tq.q, name, partitions)
}
