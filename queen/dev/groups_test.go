package dev

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

func (e *env) kv(ops ...queen.KVOp) {
	e.t.Helper()
	if _, err := e.qc.KV(ctx(e.t), ops); err != nil {
		e.t.Fatalf("kv: %v", err)
	}
}

func commitOp(group, topic string, part int32, value string) queen.KVOp {
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.GroupOffsetKey(group, topic, part), Value: json.RawMessage(value), Forever: true}
}

func commit(group, topic string, part int32, off int64) queen.KVOp {
	return commitOp(group, topic, part, `{"offset":`+itoa(off)+`,"metadata":"","ts":1787824800123}`)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// wantGroups fetches the list view with token and compares it with want
// (compacted JSON, field order included).
func (e *env) wantGroups(token, want string) {
	e.t.Helper()
	st, raw, _ := e.do("GET", "/api/v1/consumer-groups", token, "")
	if st != 200 {
		e.t.Fatalf("status %d: %s", st, raw)
	}
	var w bytes.Buffer
	if err := json.Compact(&w, []byte(want)); err != nil {
		e.t.Fatal(err)
	}
	if got := string(bytes.TrimSpace(raw)); got != w.String() {
		e.t.Fatalf("consumer groups\n got %s\nwant %s", got, w.String())
	}
}

const kafkaRowTail = `"state":"Stable","storage":"segments","subscriptionMode":null,"subscriptionTimestamp":null,"subscriptionCreatedAt":null,"conflation":false,"kind":"kafka"}`

// §6: a Kafka group is a row per (group, queue) with kind "kafka"; its lag
// is the log end minus the committed offset (the next offset to read), per
// partition, never below 0; members and partitionCursors count its
// committed partitions. With no commits the view is an empty array.
func TestConsumerGroupsKafkaRows(t *testing.T) {
	e := newEnv(t, Options{})
	e.wantGroups("", `[]`)
	e.pushN("orders", "0", 10)
	e.pushN("orders", "1", 5)
	e.pushN("0", "0", 10)
	e.pushN("b", "0", 10)
	e.kv(
		commit("billing", "orders", 0, 10), // caught up
		commit("billing", "orders", 1, 2),  // 3 behind
		commit("caught", "orders", 1, 9),   // past the end: lag 0, not -4
		commit("a:b", "0", 0, 3),           // qk:group:a%3Ab:0:0, not group a on topic b
		commit("a", "b", 0, 5),             // qk:group:a:b:0
	)
	e.wantGroups("", `[
	 {"name":"a","topics":["b"],"queueName":"b","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":5,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"a:b","topics":["0"],"queueName":"0","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":7,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"billing","topics":["orders"],"queueName":"orders","members":2,"partitionCursors":2,"partitionsWithLag":1,"totalLag":3,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"caught","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,`+kafkaRowTail+`]`)

	// Rewinding a commit moves the lag at once.
	e.kv(commit("billing", "orders", 0, 7))
	e.wantGroups("", `[
	 {"name":"a","topics":["b"],"queueName":"b","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":5,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"a:b","topics":["0"],"queueName":"0","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":7,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"billing","topics":["orders"],"queueName":"orders","members":2,"partitionCursors":2,"partitionsWithLag":2,"totalLag":6,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"caught","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,`+kafkaRowTail+`]`)
}

// Only a live qk:group: row with an integer offset naming a written
// partition of an existing queue is a commit: expired rows, other values,
// the group index, other qk: families, other namespaces, a topic with no
// queue and a partition never written contribute nothing.
func TestConsumerGroupsIgnoresWhatIsNotACommit(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("orders", "0", 10)
	e.kv(
		commit("live", "orders", 0, 4),
		queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: queen.GroupOffsetKey("gone", "orders", 0), Value: json.RawMessage(`{"offset":1}`), TTLSeconds: 5},
		commitOp("nometa", "orders", 0, `{"metadata":"x"}`),
		commitOp("strnum", "orders", 0, `{"offset":"7"}`),
		commitOp("nullv", "orders", 0, `{"offset":null}`),
		commitOp("frac", "orders", 0, `{"offset":1.5}`),
		commitOp("notobj", "orders", 0, `[1]`),
		queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:groups:orders:0", Value: json.RawMessage(`{"offset":1}`), Forever: true},
		queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: "qk:txn:orders:0", Value: json.RawMessage(`{"offset":1}`), Forever: true},
		queen.KVOp{Op: queen.OpPut, NS: "app", Key: queen.GroupOffsetKey("foreignns", "orders", 0), Value: json.RawMessage(`{"offset":1}`), Forever: true},
		commit("ghost", "nosuchqueue", 0, 1),
		commit("unwritten", "orders", 7, 1),
	)
	clk.Advance(5 * time.Second) // "gone" expires: never shown, swept or not
	e.wantGroups("", `[{"name":"live","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":6,"maxTimeLag":5,`+kafkaRowTail+`]`)
}

// maxTimeLag is the age in seconds of the oldest record still to read,
// the largest over the group's partitions; past 300 s the state is
// "Lagging". A caught-up partition has no time lag however old its records.
func TestConsumerGroupsTimeLag(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("orders", "0", 2) // offsets 0, 1 at T
	clk.Advance(100 * time.Second)
	e.pushN("orders", "0", 2) // offsets 2, 3 at T+100
	e.pushN("orders", "1", 1) // offset 0 at T+100
	e.kv(commit("g", "orders", 0, 2), commit("g", "orders", 1, 1), commit("old", "orders", 0, 0))
	clk.Advance(250 * time.Second) // T+350
	e.wantGroups("", `[
	 {"name":"g","topics":["orders"],"queueName":"orders","members":2,"partitionCursors":2,"partitionsWithLag":1,"totalLag":2,"maxTimeLag":250,`+kafkaRowTail+`,
	 {"name":"old","topics":["orders"],"queueName":"orders","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":4,"maxTimeLag":350,"state":"Lagging","storage":"segments","subscriptionMode":null,"subscriptionTimestamp":null,"subscriptionCreatedAt":null,"conflation":false,"kind":"kafka"}]`)
}

// Rows are the caller's tenant's: its KV rows against its own queues.
// Reading takes the read level.
func TestConsumerGroupsTenantScoped(t *testing.T) {
	toks, err := ParseTokens("tokA=ta,tokB=tb,tokW=ta:wo,tokR=ta:ro")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, Options{Tokens: toks})
	a, b := e.qc.As("tokA", ""), e.qc.As("tokB", "")
	for _, c := range []*queen.Client{a, b} {
		if _, err := c.Push(ctx(t), []queen.PushItem{{Queue: "shared", Partition: "0", Payload: json.RawMessage(`1`)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.KV(ctx(t), []queen.KVOp{commit("same", "shared", 0, 1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.KV(ctx(t), []queen.KVOp{commit("same", "shared", 0, 0), commit("bonly", "shared", 0, 0)}); err != nil {
		t.Fatal(err)
	}
	e.wantGroups("Bearer tokA", `[{"name":"same","topics":["shared"],"queueName":"shared","members":1,"partitionCursors":1,"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,`+kafkaRowTail+`]`)
	e.wantGroups("Bearer tokR", `[{"name":"same","topics":["shared"],"queueName":"shared","members":1,"partitionCursors":1,"partitionsWithLag":0,"totalLag":0,"maxTimeLag":0,`+kafkaRowTail+`]`)
	e.wantGroups("Bearer tokB", `[
	 {"name":"bonly","topics":["shared"],"queueName":"shared","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":1,"maxTimeLag":0,`+kafkaRowTail+`,
	 {"name":"same","topics":["shared"],"queueName":"shared","members":1,"partitionCursors":1,"partitionsWithLag":1,"totalLag":1,"maxTimeLag":0,`+kafkaRowTail+`]`)
	for tok, want := range map[string]int{"": 401, "Bearer nope": 401, "Bearer tokW": 403} {
		if st, raw, _ := e.do("GET", "/api/v1/consumer-groups", tok, ""); st != want {
			t.Errorf("token %q: %d %s, want %d", tok, st, raw, want)
		}
	}
	if st, raw, _ := e.do("POST", "/api/v1/consumer-groups", "Bearer tokA", "{}"); st != 405 {
		t.Errorf("POST: %d %s, want 405", st, raw)
	}
}

func TestCommittedOffset(t *testing.T) {
	for v, want := range map[string]int64{`{"offset":0}`: 0, `{"offset":42,"metadata":"m"}`: 42, `{"offset": -1}`: -1, `{"offset":9007199254740993}`: 9007199254740993} {
		if got, ok := committedOffset([]byte(v)); !ok || got != want {
			t.Errorf("%s: %d %v, want %d", v, got, ok, want)
		}
	}
	for _, v := range []string{`{}`, `{"offset":null}`, `{"offset":"1"}`, `{"offset":1.5}`, `{"offset":1e3}`, `{"offset":true}`, `[1]`, `x`, `{"offset":99999999999999999999}`} {
		if got, ok := committedOffset([]byte(v)); ok {
			t.Errorf("%s: %d accepted", v, got)
		}
	}
}

// Property: after any interleaving of pushes, commits (including offsets
// past the end) and clock steps, the list view equals a model computed
// from what was pushed and committed: rows sorted by (group, queue), lag
// Σ max(end − committed, 0), maxTimeLag the oldest unread record's age.
func TestConsumerGroupsModel(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		rng := rand.New(rand.NewPCG(seed, 24))
		clk := newFakeClock()
		e := newEnv(t, Options{Now: clk.Now})
		queues, groups := []string{"q0", "q1", "x:y"}, []string{"g0", "g1", "a b"}
		type pk struct{ q, p string }
		pushedAt := map[pk][]int64{} // record times (µs), by offset
		commits := map[[3]string]int64{}
		for step := 0; step < 40; step++ {
			q, p := queues[rng.IntN(len(queues))], strconv.Itoa(rng.IntN(3))
			switch rng.IntN(3) {
			case 0:
				n := 1 + rng.IntN(3)
				e.pushN(q, p, n)
				for range n {
					pushedAt[pk{q, p}] = append(pushedAt[pk{q, p}], clk.Now().UnixMicro())
				}
			case 1:
				g := groups[rng.IntN(len(groups))]
				off := int64(rng.IntN(len(pushedAt[pk{q, p}]) + 3))
				part, _ := strconv.Atoi(p)
				e.kv(commit(g, q, int32(part), off))
				commits[[3]string{g, q, p}] = off
			default:
				clk.Advance(time.Duration(rng.IntN(200)) * time.Second)
			}
		}
		now := clk.Now().UnixMicro()
		model := map[[2]string]*groupRow{}
		for k, off := range commits {
			times := pushedAt[pk{k[1], k[2]}]
			if len(times) == 0 {
				continue // a partition never written: no row
			}
			g := model[[2]string{k[0], k[1]}]
			if g == nil {
				g = &groupRow{Name: k[0], Topics: []string{k[1]}, QueueName: k[1], Storage: "segments", Kind: "kafka", State: "Stable"}
				model[[2]string{k[0], k[1]}] = g
			}
			g.Members++
			g.PartitionCursors++
			if lag := int64(len(times)) - off; lag > 0 {
				g.PartitionsWithLag++
				g.TotalLag += lag
				g.MaxTimeLag = max(g.MaxTimeLag, (now-times[off])/1e6)
			}
		}
		want := []groupRow{}
		for _, g := range model {
			if g.MaxTimeLag > laggingAfter {
				g.State = "Lagging"
			}
			want = append(want, *g)
		}
		sort.Slice(want, func(i, j int) bool {
			return want[i].Name < want[j].Name || want[i].Name == want[j].Name && want[i].QueueName < want[j].QueueName
		})
		st, raw, _ := e.do("GET", "/api/v1/consumer-groups", "", "")
		var got []groupRow
		if err := json.Unmarshal(raw, &got); st != 200 || err != nil {
			t.Fatalf("seed %d: %d %v %s", seed, st, err, raw)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d:\n got %+v\nwant %+v", seed, got, want)
		}
	}
}
