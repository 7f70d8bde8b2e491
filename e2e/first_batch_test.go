package e2e

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// TestKafkaGoConnReadsWholeBatch (issue 20, item 5; KIP-74): segmentio/
// kafka-go's Conn writes 10 records in one batch and reads "a batch" with
// a maxBytes smaller than two of them; Kafka answers the first batch whole,
// so all 10 come back, and nothing of a second batch written after it.
// Before, the facade answered the first record alone.
func TestKafkaGoConnReadsWholeBatch(t *testing.T) {
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	topic := uniq("kip74-kafkago")
	createTopic(t, tg, topic, 1, nil)

	conn, err := kafkago.DialLeader(ctxT(t, 15*time.Second), "tcp", fac.addr, topic, 0)
	if err != nil {
		t.Fatalf("DialLeader: %v", err)
	}
	defer conn.Close()
	value := bytes.Repeat([]byte("v"), 100)
	for range 2 {
		msgs := make([]kafkago.Message, 10)
		for i := range msgs {
			msgs[i] = kafkago.Message{Value: value}
		}
		if _, err := conn.WriteMessages(msgs...); err != nil {
			t.Fatalf("WriteMessages: %v", err)
		}
	}

	if _, err := conn.Seek(0, kafkago.SeekAbsolute); err != nil {
		t.Fatalf("Seek: %v", err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	batch := conn.ReadBatch(1, 150) // one record of 100 bytes, not two
	n := 0
	for {
		m, err := batch.ReadMessage()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("ReadMessage after %d: %v", n, err)
			}
			break
		}
		if m.Offset != int64(n) || !bytes.Equal(m.Value, value) {
			t.Fatalf("message %d: offset %d, %d bytes", n, m.Offset, len(m.Value))
		}
		n++
	}
	if err := batch.Close(); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("batch close: %v", err)
	}
	if n != 10 {
		t.Fatalf("the batch read %d records, want the first batch's 10", n)
	}
}
