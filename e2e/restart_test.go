package e2e

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestFacadeKill9Resume: a facade restart is a broker restart. A group
// member keeps running across a kill -9 of the facade and its restart on
// the same address; the committed offsets survive (they are Queen's), the
// member rejoins on its own, and it reads exactly what was produced after
// the restart: nothing lost, nothing re-delivered (it had committed all it
// read). The records themselves survive too.
func TestFacadeKill9Resume(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	const parts = 3
	topic, group := uniq("kill9"), uniq("g-kill9")
	createTopic(t, tg, topic, parts, nil)
	r1 := produceRound(t, tg, topic, parts, 4, "r1", 0)
	m := startMember(t, tg, "m", group, topic, memberOpts{extra: []kgo.Opt{kgo.RetryTimeout(60 * time.Second)}})
	exactlyOnce(t, "before kill -9", r1, collect(t, len(r1), 20*time.Second, m))
	assertCommitted(t, tg, group, topic, fill(parts, 4))

	fac.kill()
	if err := fac.restart(); err != nil {
		t.Fatalf("restart facade: %v", err)
	}
	assertCommitted(t, tg, group, topic, fill(parts, 4))
	waitStable(t, tg, group, topic, 1, parts)
	r2 := produceRound(t, tg, topic, parts, 3, "r2", 4)
	got := collect(t, len(r1)+len(r2), 30*time.Second, m)
	exactlyOnce(t, "across kill -9", append(append([]rec{}, r1...), r2...), got)
	assertCommitted(t, tg, group, topic, fill(parts, 7))
	assertRecords(t, "records after restart", append(append([]rec{}, r1...), r2...), consumeKgo(t, tg.bootstrap, topic, parts, len(r1)+len(r2)), recOpts{})
}

// TestFacadeRestartIdempotentProducer: the sequence windows are the node's
// memory, so after a kill -9 and restart the node holds none; it accepts a
// stock idempotent producer's next batch and starts the window there, as
// Apache Kafka 3.9 does (issue 9; this test pinned seed 001's refusal and
// the client's epoch bump before), so the producer carries on at its epoch
// and the application sees only successes. Nothing is written twice.
func TestFacadeRestartIdempotentProducer(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	topic := uniq("kill9-idem")
	createTopic(t, tg, topic, 1, nil)
	p := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic), kgo.RetryTimeout(30*time.Second))
	ctx := ctxT(t, 60*time.Second)
	var before *kgo.Record
	for i, v := range []string{"a", "b"} {
		r, err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
		if err != nil || r.Offset != int64(i) {
			t.Fatalf("produce %s: %v offset %d", v, err, r.Offset)
		}
		before = r
	}
	fac.kill()
	if err := fac.restart(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	r, err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("c")}).First()
	if err != nil {
		t.Fatalf("produce after the restart: %v", err)
	}
	if r.Offset != 2 {
		t.Errorf("produce after the restart: offset %d, want 2", r.Offset)
	}
	if r.ProducerID != before.ProducerID || r.ProducerEpoch != before.ProducerEpoch {
		t.Errorf("producer %d/%d before, %d/%d after the restart: the restarted facade refused the producer's next sequence and it had to recover",
			before.ProducerID, before.ProducerEpoch, r.ProducerID, r.ProducerEpoch)
	}
	t.Logf("producer %d/%d before, %d/%d after the restart", before.ProducerID, before.ProducerEpoch, r.ProducerID, r.ProducerEpoch)
	if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 3 {
		t.Errorf("%d records stored, want exactly 3", res.HighWatermark)
	}
}
