package e2e

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// answerDropper is what a frame proxy in front of one facade shows its
// frames to. Armed, it lets the next Produce request through but swallows
// its answer and cuts the connection: the write happened and the client
// never learnt it, which is the retry an idempotent producer exists for.
type answerDropper struct {
	armed atomic.Bool
	drops atomic.Int32
}

// hooks are one connection's: the armed Produce's correlation id is kept
// so that its answer dies with the connection.
func (d *answerDropper) hooks() frameHooks {
	var (
		mu    sync.Mutex
		doomd = map[int32]bool{} // correlation ids whose answer is to be lost
	)
	return frameHooks{
		request: func(f []byte) bool {
			if len(f) < 12 {
				return false
			}
			key := int16(binary.BigEndian.Uint16(f[4:6]))
			corr := int32(binary.BigEndian.Uint32(f[8:12]))
			if key == 0 && d.armed.CompareAndSwap(true, false) { // Produce
				mu.Lock()
				doomd[corr] = true
				mu.Unlock()
			}
			return true
		},
		answer: func(f []byte) bool {
			if len(f) < 8 {
				return false
			}
			corr := int32(binary.BigEndian.Uint32(f[4:8]))
			mu.Lock()
			lose := doomd[corr]
			mu.Unlock()
			if lose {
				d.drops.Add(1)
				return false // the answer dies with the connection
			}
			return true
		},
	}
}

// TestLostProduceAnswer: a stock (idempotent) franz-go producer whose
// produce answer is lost after the facade wrote the batch retries it on a
// new connection, and the facade answers the retry with the offset the
// batch got the first time instead of writing it again (seed 003
// "Idempotent producers"). The facade advertises the proxy, so every
// connection the client makes goes through it.
func TestLostProduceAnswer(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	d := &answerDropper{}
	_, addr := facadeBehindProxy(t, dev, d.hooks)
	tg := target{bootstrap: []string{addr}, dev: dev}
	topic := uniq("lost")
	createTopic(t, tg, topic, 1, nil)

	p := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))
	ctx := ctxT(t, 30*time.Second)
	if r, err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("first")}).First(); err != nil || r.Offset != 0 {
		t.Fatalf("first produce: %v offset %d", err, r.Offset)
	}
	d.armed.Store(true)
	r, err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("answer lost")}).First()
	if err != nil {
		t.Fatalf("produce whose answer was lost: %v", err)
	}
	if d.drops.Load() != 1 {
		t.Fatalf("the proxy dropped %d answers, want 1 (the test did not provoke a retry)", d.drops.Load())
	}
	if r.Offset != 1 {
		t.Errorf("retried batch answered offset %d, want 1 (the offset it got the first time)", r.Offset)
	}
	if r, err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("after")}).First(); err != nil || r.Offset != 2 {
		t.Errorf("next produce: %v offset %d, want 2", err, r.Offset)
	}
	res := dev.fetch(t, topic, "0", 0)
	var vals []string
	for _, rec := range res.Records {
		e := decodeEnvelope(t, rec.Payload)
		vals = append(vals, strp(e.V))
	}
	if res.HighWatermark != 3 {
		t.Errorf("stored %d records %v, want 3: the retried batch was written twice", res.HighWatermark, vals)
	}
}
