package dev

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
		{"strided", func() []queen.PushItem {
			// Numbered keys dealt round the partitions: every record its
			// own run. The 64 KiB of slack hides an estimate short by a few
			// bytes a record below some 10,000 records.
			items := facadeItems(20000)
			for i := range items {
				items[i].TransactionID = "qk:7:0:" + strconv.Itoa(i)
			}
			return items
		}()},
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
			plan, err := b.planPush(DefaultTenant, req.items, b.now(), x.batch, nil)
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

// The committed answer is sized up front (txnRequest.answerBytes) at no
// less than what it renders, so that it is not doubled and copied as it is
// written: the facade's records (their dedup keys echoed) and records
// without a transactionId (a generated id echoed).
func TestTxnAnswerSizedUpFront(t *testing.T) {
	noKeys := facadeItems(2000)
	for i := range noKeys {
		noKeys[i].TransactionID = ""
	}
	for _, shape := range []struct {
		name  string
		items []queen.PushItem
	}{{"facade", facadeItems(2000)}, {"generated ids", noKeys}} {
		t.Run(shape.name, func(t *testing.T) {
			b, err := New(Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			body, err := json.Marshal(queen.TxnRequest{Operations: []queen.TxnOperation{{Type: "push", Items: shape.items}},
				KV: []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:txn:a", Value: json.RawMessage(`{"pid":7}`), Forever: true, Required: true}}})
			if err != nil {
				t.Fatal(err)
			}
			req, terr := decodeTxn(body)
			if terr != nil {
				t.Fatal(terr.msg)
			}
			w := httptest.NewRecorder()
			b.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/api/v1/transaction", bytes.NewReader(body)))
			if w.Code != http.StatusOK || !bytes.Contains(w.Body.Bytes(), []byte(`"success":true`)) {
				t.Fatalf("%d %.200s", w.Code, w.Body.String())
			}
			if got, sized := w.Body.Len(), req.answerBytes(); got > sized {
				t.Errorf("the answer holds %d bytes, sized for %d", got, sized)
			}
		})
	}
}
