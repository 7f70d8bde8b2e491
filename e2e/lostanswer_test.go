package e2e

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// answerDropper is a Kafka-frame-aware TCP proxy in front of one facade.
// Armed, it forwards the next Produce request but swallows its answer and
// cuts the connection: the write happened and the client never learnt it,
// which is the retry an idempotent producer exists for.
type answerDropper struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	drops  atomic.Int32
}

func startAnswerDropper(t testing.TB, target string) *answerDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &answerDropper{ln: ln, target: target}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go d.serve(c)
		}
	}()
	return d
}

func (d *answerDropper) addr() string { return d.ln.Addr().String() }

// readFrame reads one size-prefixed frame, prefix included.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n > 128<<20 {
		return nil, io.ErrUnexpectedEOF
	}
	f := make([]byte, 4+n)
	copy(f, size[:])
	_, err := io.ReadFull(r, f[4:])
	return f, err
}

func (d *answerDropper) serve(client net.Conn) {
	server, err := net.Dial("tcp", d.target)
	if err != nil {
		client.Close()
		return
	}
	var (
		mu    sync.Mutex
		doomd = map[int32]bool{} // correlation ids whose answer is to be lost
	)
	closeBoth := func() { client.Close(); server.Close() }
	go func() { // client → server
		defer closeBoth()
		for {
			f, err := readFrame(client)
			if err != nil || len(f) < 12 {
				return
			}
			key := int16(binary.BigEndian.Uint16(f[4:6]))
			corr := int32(binary.BigEndian.Uint32(f[8:12]))
			if key == 0 && d.armed.CompareAndSwap(true, false) { // Produce
				mu.Lock()
				doomd[corr] = true
				mu.Unlock()
			}
			if _, err := server.Write(f); err != nil {
				return
			}
		}
	}()
	defer closeBoth()
	for { // server → client
		f, err := readFrame(server)
		if err != nil || len(f) < 8 {
			return
		}
		corr := int32(binary.BigEndian.Uint32(f[4:8]))
		mu.Lock()
		lose := doomd[corr]
		mu.Unlock()
		if lose {
			d.drops.Add(1)
			return // the answer dies with the connection
		}
		if _, err := client.Write(f); err != nil {
			return
		}
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
	// The dropper needs the facade's address and the facade the dropper's:
	// reserve the facade's port, bind the dropper, then start the facade.
	facPort := freePort(t)
	d := startAnswerDropper(t, "127.0.0.1:"+strconv.Itoa(facPort))
	f := newFacade(dev.url, facPort, map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": d.addr()})
	t.Cleanup(f.kill)
	if err := f.start(); err != nil {
		t.Fatalf("%v\n%s", err, f.Out.From(0))
	}
	f.attachLogs(t)
	tg := target{bootstrap: []string{d.addr()}, dev: dev}
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
