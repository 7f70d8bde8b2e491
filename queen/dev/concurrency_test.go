package dev

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// Every route at once (pushes, long polls, KV, transactions, configure,
// delete, sweeps) on a durable broker: no error other than the expected
// verdicts, no deadlock, and the log replays to the same state (run with
// -race to check the locking).
func TestMixedLoad(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, Options{Dir: dir})
	c := ctx(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	run := func(name string, n int, f func(i int) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i++ {
				if err := f(i); err != nil {
					errs <- fmt.Errorf("%s %d: %w", name, i, err)
					return
				}
			}
		}()
	}
	for w := 0; w < 3; w++ {
		run("push", 40, func(i int) error {
			_, err := e.qc.Push(c, []queen.PushItem{{Queue: "m", Partition: fmt.Sprint(i % 3), Payload: json.RawMessage(`1`)}, {Queue: "tmp", Payload: json.RawMessage(`2`)}})
			return err
		})
	}
	run("fetch", 20, func(i int) error {
		_, err := e.qc.Fetch(c, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "m", Partition: "0", Offset: int64(i)}, {Queue: "tmp", Partition: "Default", Offset: 0}}, MaxWaitMs: 20, MinBytes: 1 << 20})
		return err
	})
	run("kv", 60, func(i int) error {
		_, err := e.qc.KV(c, []queen.KVOp{put(fmt.Sprintf("qk:%d", i%7), `1`), {Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: "qk:"}})
		return err
	})
	run("txn", 40, func(i int) error {
		_, err := e.qc.Transaction(c, queen.TxnRequest{
			Operations: []queen.TxnOperation{{Type: "push", Items: []queen.PushItem{{Queue: "m", Partition: "0", Payload: json.RawMessage(`3`)}}}},
			KV:         []queen.KVOp{put(fmt.Sprintf("qk:t%d", i%5), `1`)},
		})
		return err
	})
	run("admin", 20, func(i int) error {
		if _, err := e.qc.Configure(c, "m", map[string]any{"retentionEnabled": i%2 == 0, "retentionSeconds": 3600}); err != nil {
			return err
		}
		_, err := e.qc.DeleteQueue(c, "tmp")
		e.b.Sweep()
		return err
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	snapshot(t, e) // creates "cfg"; the next snapshot is stable
	want := snapshot(t, e)
	e.srv.Close()
	if err := e.b.Close(); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, reopen(t, dir, Options{})); got != want {
		t.Fatalf("replay differs after mixed load:\nwant:\n%s\ngot:\n%s", want, got)
	}
}
