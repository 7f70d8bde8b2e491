package txn

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// BenchmarkCommit: one single-mode commit of n 1 KiB records over 8
// partitions (EndTxn, staging outside the timer) against an in-process
// queen-dev, and beside it, alternating, the bare Queen transaction of the
// same records (POST /api/v1/transaction with the same items and a fence):
// the figures are each side's median ms and their ratio. The store is on
// disk (a temp dir), as queen-dev's is, so that the write-ahead log's fsync
// of a multi-megabyte batch is in the figure. QK_COMMIT_RECORDS=<n> adds a
// size (a 100 ms interval's transaction is 10,000–30,000 records).
func BenchmarkCommit(b *testing.B) {
	sizes := []int{100, 4000}
	if v, err := strconv.Atoi(os.Getenv("QK_COMMIT_RECORDS")); err == nil && v > 0 {
		sizes = append(sizes, v)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			q := devbroker.Start(b, dev.Options{Dir: b.TempDir(), Logger: slog.New(slog.DiscardHandler)}, nil).Client
			m := New(Config{Queen: q, IDs: &countingIDs{next: 7}, Groups: &fakeGroups{codes: map[string]int16{}}, Log: slog.New(slog.DiscardHandler)})
			cl := Client{Owner: 1}
			r := m.InitProducerID(bg, cl, initReq("bench", time.Minute))
			pid, epoch := r.ProducerID, r.ProducerEpoch
			value := bytes.Repeat([]byte("q"), 1024)
			parts := []int32{0, 1, 2, 3, 4, 5, 6, 7}
			batches := func(seq int32, pid int64) []*Batch {
				var out []*Batch
				per := n / len(parts)
				for _, p := range parts {
					bt := &Batch{TransactionalID: "bench", ProducerID: pid, ProducerEpoch: epoch, Topic: "out", Partition: p, FirstSeq: seq}
					bt.Keys = producer.DedupKeys(pid, epoch, seq+int32(p)*int32(per), per)
					for i := range per {
						rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: value, Timestamp: time.Now().UnixMilli()}
						bt.Payloads = append(bt.Payloads, envelope.Append(nil, &rec))
						bt.Bytes += int64(len(value) + len(rec.Key))
					}
					out = append(out, bt)
				}
				return out
			}
			var commit, bare []float64
			var version int64
			seq := int32(0)
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if a := m.AddPartitionsToTxn(bg, cl, addParts("bench", pid, epoch, "out", parts...), served); addCodes(a)[0] != 0 {
					b.Fatal("add", addCodes(a))
				}
				for _, bt := range batches(seq, pid) {
					if code, msg := m.Produce(bg, cl, bt); code != 0 {
						b.Fatal(code, msg)
					}
				}
				bareItems := batches(seq, pid+1)
				seq += int32(n)
				b.StartTimer()
				t0 := time.Now()
				if c := m.EndTxn(context.Background(), cl, endTxn("bench", pid, epoch, true)).ErrorCode; c != 0 {
					b.Fatal("commit", c)
				}
				commit = append(commit, float64(time.Since(t0))/float64(time.Millisecond))
				b.StopTimer()
				var items []queen.PushItem
				for _, bt := range bareItems {
					for j, p := range bt.Payloads {
						items = append(items, queen.PushItem{Queue: "out", Partition: strconv.Itoa(int(bt.Partition)), Payload: p, TransactionID: bt.Keys[j]})
					}
				}
				expect := version
				fence := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey("bare"), Forever: true, Expect: &expect, Required: true, Value: []byte(`{"state":"committed"}`)}
				t0 = time.Now()
				res, err := q.Transaction(bg, queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: items}}, KV: []queen.KVOp{fence}})
				if err != nil {
					b.Fatal(err)
				}
				bare = append(bare, float64(time.Since(t0))/float64(time.Millisecond))
				version = res[0].Version
				b.StartTimer()
			}
			slices.Sort(commit)
			slices.Sort(bare)
			c, w := commit[len(commit)/2], bare[len(bare)/2]
			b.ReportMetric(c, "commit-p50-ms")
			b.ReportMetric(w, "bare-p50-ms")
			b.ReportMetric(c/w, "commit/bare")
		})
	}
}

// BenchmarkClusterCommit: one cluster-mode transaction of n 1 KiB records
// over 8 partitions (KIP-890: each batch's Produce v12 opens it), staged
// by three nodes at once (Shared, a third of the partitions each), then
// committed by the owner's EndTxn v5 (QueenStages), all against one
// in-process queen-dev; beside it, alternating, the bare Queen
// transaction of the same records. The figures are the staging's p50 (the
// slowest node's), the commit's p50, the bare p50 and commit ÷ bare.
func BenchmarkClusterCommit(b *testing.B) {
	for _, n := range []int{100, 4000} {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			q := devbroker.Start(b, dev.Options{Logger: slog.New(slog.DiscardHandler)}, nil).Client
			quiet := slog.New(slog.DiscardHandler)
			now := func() int64 { return time.Now().UnixMilli() }
			m := New(Config{Queen: q, IDs: &countingIDs{next: 7}, Groups: &fakeGroups{codes: map[string]int16{}}, Log: quiet, NodeID: 1,
				Cluster: true, TransactionV2: true, Stages: QueenStages{Clock: now, Log: quiet}})
			var nodes []*Shared
			for id := range int32(3) {
				nodes = append(nodes, NewShared(SharedConfig{Queen: q, Groups: &fakeGroups{codes: map[string]int16{}}, Log: quiet, NodeID: id + 1, TransactionV2: true}))
			}
			cl := Client{Owner: 1}
			r := m.InitProducerID(bg, cl, initReq("bench", time.Minute))
			if r.ErrorCode != 0 {
				b.Fatal("init", r.ErrorCode)
			}
			pid, epoch := r.ProducerID, r.ProducerEpoch
			value := bytes.Repeat([]byte("q"), 1024)
			const parts = 8
			batches := func(pid int64, epoch int16) [][]*Batch {
				out := make([][]*Batch, len(nodes))
				per := n / parts
				for p := range int32(parts) {
					bt := &Batch{TransactionalID: "bench", ProducerID: pid, ProducerEpoch: epoch, Topic: "out", Partition: p, FirstSeq: p * int32(per), Implicit: true}
					bt.Keys = producer.DedupKeys(pid, epoch, bt.FirstSeq, per)
					for i := range per {
						rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: value, Timestamp: time.Now().UnixMilli()}
						bt.Payloads = append(bt.Payloads, envelope.Append(nil, &rec))
						bt.Bytes += int64(len(value) + len(rec.Key))
					}
					out[int(p)%len(nodes)] = append(out[int(p)%len(nodes)], bt)
				}
				return out
			}
			var staging, commit, bare []float64
			var version int64
			barePID := int64(1 << 40)
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				var wg sync.WaitGroup
				for j, bs := range batches(pid, epoch) {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, o := range nodes[j].ProduceAll(bg, cl, bs) {
							if o.Code != 0 {
								b.Error("stage", o.Code, o.Msg)
							}
						}
					}()
				}
				wg.Wait()
				staging = append(staging, float64(time.Since(t0))/float64(time.Millisecond))
				t0 = time.Now()
				resp := endV5(m, cl, "bench", pid, epoch, true)
				if resp.ErrorCode != 0 {
					b.Fatal("commit", resp.ErrorCode)
				}
				commit = append(commit, float64(time.Since(t0))/float64(time.Millisecond))
				pid, epoch = resp.ProducerID, resp.ProducerEpoch
				b.StopTimer()
				var items []queen.PushItem
				for _, bs := range batches(barePID, int16(i)) {
					for _, bt := range bs {
						for j, p := range bt.Payloads {
							items = append(items, queen.PushItem{Queue: "out", Partition: strconv.Itoa(int(bt.Partition)), Payload: p, TransactionID: bt.Keys[j]})
						}
					}
				}
				expect := version
				fence := queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.TxnKey("bare"), Forever: true, Expect: &expect, Required: true, Value: []byte(`{"state":"committed"}`)}
				t0 = time.Now()
				res, err := q.Transaction(bg, queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: items}}, KV: []queen.KVOp{fence}})
				if err != nil {
					b.Fatal(err)
				}
				bare = append(bare, float64(time.Since(t0))/float64(time.Millisecond))
				version = res[0].Version
				b.StartTimer()
			}
			slices.Sort(staging)
			slices.Sort(commit)
			slices.Sort(bare)
			c, w := commit[len(commit)/2], bare[len(bare)/2]
			b.ReportMetric(staging[len(staging)/2], "staging-p50-ms")
			b.ReportMetric(c, "commit-p50-ms")
			b.ReportMetric(w, "bare-p50-ms")
			b.ReportMetric(c/w, "commit/bare")
		})
	}
}
