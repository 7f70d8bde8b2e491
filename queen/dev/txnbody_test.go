package dev

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// The transaction route reads its body into a pooled buffer (bodyPool, or
// bigBodies past smallBody) that the decoded payloads and KV values
// alias; it goes back to the pool only once the handler has applied the
// request. Transactions sent at once by several clients, each with payloads
// of its own, are stored as each sent them: a buffer reused while a
// request still read it would store another's bytes (and, under -race, is
// a reported race).
func TestConcurrentTransactionBodiesStoredAsSent(t *testing.T) {
	t.Run("small", func(t *testing.T) { storedAsSent(t, bodyCase{workers: 4, rounds: 8, items: 20, size: 200}) })
	// Past smallBody: bigBodies.
	t.Run("big", func(t *testing.T) {
		storedAsSent(t, bodyCase{workers: 2, rounds: 3, items: smallBody/(8<<10) + 64, size: 8 << 10})
	})
}

// bodyCase is workers sending rounds transactions each, of items records
// of size bytes.
type bodyCase struct{ workers, rounds, items, size int }

func storedAsSent(t *testing.T, c bodyCase) {
	e := newEnv(t, Options{})
	payload := func(w, r, i int) json.RawMessage {
		head := fmt.Sprintf("w%d r%d i%d ", w, r, i)
		s, _ := json.Marshal(head + string(bytes.Repeat([]byte{byte('a' + w)}, c.size-len(head))))
		return s
	}
	var wg sync.WaitGroup
	errs := make(chan error, c.workers)
	for w := range c.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range c.rounds {
				items := make([]queen.PushItem, c.items)
				for i := range items {
					items[i] = queen.PushItem{Queue: "body-" + strconv.Itoa(w), Partition: "0", Payload: payload(w, r, i),
						TransactionID: fmt.Sprintf("w%d:r%d:i%d", w, r, i)}
				}
				_, err := e.qc.Transaction(context.Background(), queen.TxnRequest{
					Operations: []queen.TxnOperation{{Type: "push", Items: items}},
					KV:         []queen.KVOp{put("body:"+strconv.Itoa(w), fmt.Sprintf(`{"w":%d,"r":%d,"pad":%q}`, w, r, bytes.Repeat([]byte{byte('a' + w)}, 64)))},
				})
				if err != nil {
					errs <- fmt.Errorf("worker %d round %d: %w", w, r, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for w := range c.workers {
		var got []queen.FetchRecord
		for len(got) < c.rounds*c.items {
			fr, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "body-" + strconv.Itoa(w), Partition: "0", Offset: int64(len(got))}}})
			if err != nil || fr[0].Error != "" || len(fr[0].Records) == 0 {
				t.Fatalf("worker %d: fetch at %d: %+v %v", w, len(got), fr, err)
			}
			got = append(got, fr[0].Records...)
		}
		if len(got) != c.rounds*c.items {
			t.Fatalf("worker %d: %d records stored, want %d", w, len(got), c.rounds*c.items)
		}
		for k, rec := range got {
			r, i := k/c.items, k%c.items
			if want := payload(w, r, i); !bytes.Equal(rec.Payload, want) {
				t.Fatalf("worker %d record %d: stored %.60s…, sent %.60s…", w, k, rec.Payload, want)
			}
			if want := fmt.Sprintf("w%d:r%d:i%d", w, r, i); rec.TransactionID != want {
				t.Fatalf("worker %d record %d: transactionId %q, sent %q", w, k, rec.TransactionID, want)
			}
		}
		res, err := e.qc.KV(ctx(t), []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{"body:" + strconv.Itoa(w)}}})
		if err != nil || len(res[0].Rows) != 1 {
			t.Fatalf("worker %d: kv %+v %v", w, res, err)
		}
		want := fmt.Sprintf(`{"w":%d,"r":%d,"pad":%q}`, w, c.rounds-1, bytes.Repeat([]byte{byte('a' + w)}, 64))
		if string(res[0].Rows[0].Value) != want {
			t.Fatalf("worker %d: kv stored %s, sent %s", w, res[0].Rows[0].Value, want)
		}
	}
}

// A body buffer past smallBody is kept for the next request that declares
// more than smallBody (a commit body at a 100 ms interval), not for the
// small routes, and one past the body ceiling is dropped. Before, every
// buffer past 8 MiB was dropped and each big commit body was read into a
// buffer grown anew by doubling.
func TestBigBodyBufferKept(t *testing.T) {
	for len(bigBodies) > 0 {
		<-bigBodies
	}
	const maxBody = 64 << 20
	p := new([]byte)
	keepBody(p, make([]byte, 0, smallBody+1), maxBody)
	if q := takeBody(smallBody); q == p {
		t.Fatal("a small request took the big buffer")
	}
	if q := takeBody(smallBody + 1); q != p || cap(*q) != smallBody+1 || len(*q) != 0 {
		t.Fatalf("big request: got %p (cap %d), want the kept %p", q, cap(*q), p)
	}
	keepBody(p, make([]byte, 0, maxBody+bytes.MinRead+1), maxBody)
	if len(bigBodies) != 0 {
		t.Fatal("a buffer past the body ceiling was kept")
	}
	for range cap(bigBodies) + 1 {
		keepBody(new([]byte), make([]byte, 0, smallBody+1), maxBody)
	}
	if len(bigBodies) != cap(bigBodies) {
		t.Fatalf("%d big buffers kept, want %d", len(bigBodies), cap(bigBodies))
	}
	for len(bigBodies) > 0 {
		<-bigBodies
	}
}
