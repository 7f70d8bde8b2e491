package dev

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// A transaction's batch is sized up front (txnRequest.batchBytes) at no
// less than what its records write into it, so that it is never grown
// (and copied) while written: the facade's records (numbered dedup keys,
// 1 KiB envelopes) and the smallest payloads with keys of their own.
func TestTxnBatchSizedUpFront(t *testing.T) {
	for _, shape := range []struct {
		name  string
		items []queen.PushItem
	}{
		{"facade", facadeItems(3000)},
		{"small", func() []queen.PushItem {
			items := make([]queen.PushItem, 3000)
			for i := range items {
				items[i] = queen.PushItem{Queue: "q", Partition: strconv.Itoa(i % 3), Payload: json.RawMessage(`1`), TransactionID: "key-" + strconv.Itoa(i) + "-x"}
			}
			return items
		}()},
	} {
		t.Run(shape.name, func(t *testing.T) {
			b, err := New(Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			body, err := json.Marshal(queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: shape.items}}})
			if err != nil {
				t.Fatal(err)
			}
			req, terr := decodeTxn(body)
			if terr != nil {
				t.Fatal(terr.msg)
			}
			b.mu.Lock()
			defer b.mu.Unlock()
			x := b.newKVExecSized(DefaultTenant, b.now(), req.batchBytes())
			plan, err := b.planPush(DefaultTenant, req.items, b.now(), x.batch)
			if err != nil {
				t.Fatal(err)
			}
			plan.write(x.batch, b.st)
			if got, sized := len(x.batch.Repr()), req.batchBytes(); got > sized {
				t.Errorf("the batch holds %d bytes, sized for %d", got, sized)
			}
			x.rollback()
		})
	}
}
