package e2e

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// producerTap is what a frame proxy in front of a facade shows its frames
// to: it decodes every Produce request passing through and records each
// batch's producer id and epoch, and counts InitProducerId requests: what
// a facade's producer state was told, seen from outside the process.
type producerTap struct {
	mu      sync.Mutex
	batches []producerBatch
	inits   int
}

type producerBatch struct {
	id    int64
	epoch int16
}

// hooks are every connection's: each request is recorded on its way.
func (p *producerTap) hooks() frameHooks {
	return frameHooks{request: func(f []byte) bool { p.record(f); return true }}
}

// since is what was recorded after mark batches: the batches, and the
// InitProducerId requests in all.
func (p *producerTap) since(mark int) ([]producerBatch, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]producerBatch(nil), p.batches[mark:]...), p.inits
}

func (p *producerTap) mark() (batches, inits int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.batches), p.inits
}

// record decodes one request frame (size prefix included): the header
// (key, version, correlation id, client id, and a flexible version's
// tagged fields), then a Produce body's record batches.
func (p *producerTap) record(f []byte) {
	if len(f) < 14 {
		return
	}
	key := int16(binary.BigEndian.Uint16(f[4:6]))
	version := int16(binary.BigEndian.Uint16(f[6:8]))
	switch key {
	case kmsg.InitProducerID.Int16():
		p.mu.Lock()
		p.inits++
		p.mu.Unlock()
		return
	case kmsg.Produce.Int16():
	default:
		return
	}
	body := f[14:]
	if n := int16(binary.BigEndian.Uint16(f[12:14])); n > 0 {
		if int(n) > len(body) {
			return
		}
		body = body[n:]
	}
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(version)
	if req.IsFlexible() {
		r := bytes.NewReader(body)
		tags, err := binary.ReadUvarint(r)
		for i := uint64(0); err == nil && i < tags; i++ {
			var size uint64
			if _, err = binary.ReadUvarint(r); err == nil {
				if size, err = binary.ReadUvarint(r); err == nil {
					_, err = r.Seek(int64(size), 1)
				}
			}
		}
		if err != nil {
			return
		}
		body = body[len(body)-r.Len():]
	}
	if err := req.ReadFrom(body); err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range req.Topics {
		for _, part := range t.Partitions {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(part.Records); err == nil {
				p.batches = append(p.batches, producerBatch{b.ProducerID, b.ProducerEpoch})
			}
		}
	}
}

// TestSaramaIdempotentProducerSurvivesFacadeRestart: the restarted facade
// accepts the next sequence of a producer it never saw (issue 9; this test
// pinned sarama's local epoch bump after seed 001's refusal before), so
// sarama carries on at its epoch, without InitProducerId. The facade is a
// binary of its own, stopped gracefully (SIGTERM) and restarted on the same
// address; it advertises a tap that reads the producer id and epoch of
// every batch sarama sends it.
func TestSaramaIdempotentProducerSurvivesFacadeRestart(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	tap := &producerTap{}
	fac, addr := facadeBehindProxy(t, dev, tap.hooks)
	topic := uniq("restart-sarama")
	createTopic(t, target{bootstrap: []string{addr}, dev: dev}, topic, 1, nil)
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Retry.Max = 20
	cfg.Producer.Retry.Backoff = 50 * time.Millisecond
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Net.MaxOpenRequests = 1
	cfg.Metadata.Retry.Backoff = 50 * time.Millisecond
	prod, err := sarama.NewSyncProducer([]string{addr}, cfg)
	require.NoError(t, err)
	defer prod.Close()
	sent := 0
	send := func(n int) {
		for i := 0; i < n; i++ {
			_, off, err := prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(sent))})
			if err != nil {
				// A send lost with the stopped connection is resent; the
				// facade answers it from Queen's dedup window if it landed.
				_, off, err = prod.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(fmt.Sprint(sent))})
			}
			require.NoError(t, err)
			require.Equal(t, int64(sent), off)
			sent++
		}
	}
	send(5)
	before, _ := tap.since(0)
	require.NotEmpty(t, before)
	pid := before[0].id
	fac.terminate(t, 30*time.Second)
	require.NoError(t, fac.restart())
	mark, inits := tap.mark()
	send(5)
	// The restarted facade met the producer (its batches reached it), at
	// epoch 0 under the producer id it had before.
	after, initsAfter := tap.since(mark)
	require.NotEmpty(t, after, "the restarted facade met the producer")
	for _, b := range after {
		require.Equal(t, pid, b.id)
		require.Equal(t, int16(0), b.epoch, "no bump needed, neither sarama's local one nor an InitProducerId")
	}
	require.Equal(t, inits, initsAfter, "no bump needed, neither sarama's local one nor an InitProducerId")
	res := dev.fetch(t, topic, "0", 0)
	require.Len(t, res.Records, 10)
	for i, r := range res.Records {
		require.Equal(t, strp(b64([]byte(fmt.Sprint(i)))), strp(decodeEnvelope(t, r.Payload).V))
	}
}
