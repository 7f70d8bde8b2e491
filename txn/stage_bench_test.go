package txn

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// BenchmarkStageContents: what a cluster-mode commit does before its Queen
// transaction, reading the stage: n 1 KiB records staged as r: rows (8
// partitions, one batch each) read back page by page from an in-process
// queen-dev and turned into the commit's push items.
func BenchmarkStageContents(b *testing.B) {
	for _, n := range []int{100, 4000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			q := devbroker.Start(b, dev.Options{Logger: slog.New(slog.DiscardHandler)}, nil).Client
			value := bytes.Repeat([]byte("q"), 1024)
			const pid, epoch = 7, 0
			ref := Ref{PID: pid, Epoch: epoch, Txn: 1}
			key := Key{ID: "bench"}
			prefix := queen.TxnStagePrefix(key.ID, ref.PID, ref.Epoch, ref.Txn)
			per := n / 8
			staged := 0
			for p := range int32(8) {
				bt := &Batch{TransactionalID: key.ID, ProducerID: pid, ProducerEpoch: epoch, Topic: "out", Partition: p, FirstSeq: p * int32(per)}
				bt.Keys = producer.DedupKeys(pid, epoch, bt.FirstSeq, per)
				for i := range per {
					rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: value, Timestamp: time.Now().UnixMilli()}
					bt.Payloads = append(bt.Payloads, envelope.Append(nil, &rec))
					bt.Bytes += int64(len(value))
				}
				ops, err := recordRows(prefix, bt, 600)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := q.KV(bg, ops); err != nil {
					b.Fatal(err)
				}
				staged += len(bt.Payloads)
			}
			stages := QueenStages{Clock: func() int64 { return time.Now().UnixMilli() }, Log: slog.New(slog.DiscardHandler)}
			b.ReportAllocs()
			for b.Loop() {
				s := stages.Open(key, ref, q)
				items, _, err := s.Contents(bg)
				if err != nil || len(items) != staged {
					b.Fatal(len(items), err)
				}
			}
		})
	}
}
