package dev

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// The §6 example exchange: records of one push share a ts in the contract
// format; an unwritten partition of an existing queue is an empty log.
func TestFetchContractExample(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("orders", "3", 41)
	clk.Advance(time.Second)
	st, raw := e.post("/api/v1/push", `{"items":[{"queue":"orders","partition":"3","payload":{"k":"a2V5LTE=","t":1787824800123,"v":"eyJuIjoxfQ=="}},
          {"queue":"orders","partition":"3","payload":{"k":null,"v":"eA=="}}]}`)
	wantStatus(t, st, raw, 201)
	st, raw = e.post("/api/v1/fetch", `{"entries":[{"queue":"orders","partition":"3","offset":41,"maxBytes":1048576},
            {"queue":"orders","partition":"9","offset":0,"maxBytes":1048576}],
 "maxWaitMs":500,"minBytes":1}`)
	v := wantStatus(t, st, raw, 200)
	e0 := field(v, "entries", 0)
	if field(e0, "queue") != "orders" || field(e0, "partition") != "3" || num(field(e0, "highWatermark")) != 43 || num(field(e0, "logStartOffset")) != 0 {
		t.Fatalf("entry 0: %s", raw)
	}
	recs := field(e0, "records").([]any)
	if len(recs) != 2 || num(field(recs[0], "offset")) != 41 || num(field(recs[1], "offset")) != 42 {
		t.Fatalf("records: %s", raw)
	}
	if field(recs[0], "ts") != "2026-08-28T09:15:01.123456Z" || field(recs[1], "ts") != field(recs[0], "ts") {
		t.Errorf("ts %v %v", field(recs[0], "ts"), field(recs[1], "ts"))
	}
	if !strings.Contains(string(raw), `"payload":{"k":"a2V5LTE=","t":1787824800123,"v":"eyJuIjoxfQ=="}`) {
		t.Errorf("payload not verbatim: %s", raw)
	}
	want1 := `{"queue":"orders","partition":"9","records":[],"highWatermark":0,"logStartOffset":0}`
	if !strings.Contains(string(raw), want1) {
		t.Errorf("entry 1 want %s in %s", want1, raw)
	}
}

func TestFetchBoundaries(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 5)
	res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: "missing", Partition: "0", Offset: 0},
		{Queue: "q", Partition: "0", Offset: 5}, // == HWM
		{Queue: "q", Partition: "0", Offset: 6}, // > HWM
		{Queue: "q", Partition: "7", Offset: 0}, // never written
		{Queue: "q", Partition: "7", Offset: 1}, // beyond an empty log
		{Queue: "q", Partition: "0", Offset: 3}, // mid-log
		{Queue: "q", Partition: "0", Offset: 0}, // whole log
		{Queue: "missing", Partition: "0", Offset: 9},
	}})
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		n        int
		hwm, lso int64
		err      string
	}
	wants := []want{
		{0, 0, 0, queen.FetchErrUnknownTopic},
		{0, 5, 0, ""},
		{0, 5, 0, queen.FetchErrOutOfRange},
		{0, 0, 0, ""},
		{0, 0, 0, queen.FetchErrOutOfRange},
		{2, 5, 0, ""},
		{5, 5, 0, ""},
		{0, 0, 0, queen.FetchErrUnknownTopic},
	}
	for i, w := range wants {
		r := res[i]
		if len(r.Records) != w.n || r.HighWatermark != w.hwm || r.LogStartOffset != w.lso || r.Error != w.err {
			t.Errorf("entry %d: %d records hwm %d lso %d err %q, want %+v", i, len(r.Records), r.HighWatermark, r.LogStartOffset, r.Error, w)
		}
	}
	if res[5].Records[0].Offset != 3 || res[5].Records[1].Offset != 4 {
		t.Errorf("mid-log offsets %+v", res[5].Records)
	}
}

// records is always an array, highWatermark/logStartOffset always present.
func TestFetchShapeAlwaysComplete(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw := e.post("/api/v1/fetch", `{"entries":[{"queue":"nope","offset":0}]}`)
	wantStatus(t, st, raw, 200)
	want := `{"entries":[{"queue":"nope","partition":"Default","records":[],"highWatermark":0,"logStartOffset":0,"error":"UNKNOWN_TOPIC_OR_PARTITION"}]}`
	if string(raw) != want {
		t.Errorf("got %s\nwant %s", raw, want)
	}
	st, raw = e.post("/api/v1/fetch", `{"entries":[]}`)
	if st != 200 || string(raw) != `{"entries":[]}` {
		t.Errorf("empty entries: %d %s", st, raw)
	}
}

func TestFetchPartitionForms(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "7", 1)
	e.pushN("q", "Default", 2)
	st, raw := e.post("/api/v1/fetch", `{"entries":[{"queue":"q","partition":7,"offset":0},{"queue":"q","offset":0},{"queue":"q","partition":null,"offset":1}]}`)
	v := wantStatus(t, st, raw, 200)
	for i, w := range []struct {
		part string
		n    int
	}{{"7", 1}, {"Default", 2}, {"Default", 1}} {
		if field(v, "entries", i, "partition") != w.part || len(field(v, "entries", i, "records").([]any)) != w.n {
			t.Errorf("entry %d: %v", i, field(v, "entries", i))
		}
	}
}

func TestFetchBadBodies(t *testing.T) {
	var many strings.Builder
	many.WriteString(`{"entries":[`)
	for i := 0; i <= maxFetchEntries; i++ {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`{"queue":"q","offset":0}`)
	}
	many.WriteString(`]}`)
	cases := map[string]string{
		"1025 entries":       many.String(),
		"negative offset":    `{"entries":[{"queue":"q","offset":0},{"queue":"q","offset":-1}]}`,
		"offset missing":     `{"entries":[{"queue":"q"}]}`,
		"offset float":       `{"entries":[{"queue":"q","offset":1.5}]}`,
		"offset string":      `{"entries":[{"queue":"q","offset":"1"}]}`,
		"queue missing":      `{"entries":[{"offset":0}]}`,
		"partition float":    `{"entries":[{"queue":"q","partition":1.5,"offset":0}]}`,
		"partition bool":     `{"entries":[{"queue":"q","partition":true,"offset":0}]}`,
		"entries missing":    `{}`,
		"entries not array":  `{"entries":5}`,
		"malformed":          `{"entries":[`,
		"maxWaitMs not int":  `{"entries":[],"maxWaitMs":"x"}`,
		"minBytes not int":   `{"entries":[],"minBytes":1.5}`,
		"maxBytes not int":   `{"entries":[{"queue":"q","offset":0,"maxBytes":"big"}]}`,
		"top-level array":    `[]`,
		"offset over int64":  `{"entries":[{"queue":"q","offset":99999999999999999999}]}`,
		"partition overflow": `{"entries":[{"queue":"q","partition":-,"offset":0}]}`,
	}
	e := newEnv(t, Options{})
	for name, body := range cases {
		st, raw := e.post("/api/v1/fetch", body)
		v := wantStatus(t, st, raw, 400)
		if s, _ := field(v, "error").(string); !strings.HasPrefix(s, "bad body: ") {
			t.Errorf("%s: body %s", name, raw)
		}
	}
}

func pushSized(t *testing.T, e *env, queue, part string, sizes ...int) {
	t.Helper()
	items := make([]queen.PushItem, len(sizes))
	for i, n := range sizes {
		items[i] = queen.PushItem{Queue: queue, Partition: part, Payload: json.RawMessage(`"` + strings.Repeat("x", n-2) + `"`)}
	}
	if _, err := e.qc.Push(ctx(t), items); err != nil {
		t.Fatal(err)
	}
}

func TestFetchByteBudgets(t *testing.T) {
	e := newEnv(t, Options{})
	pushSized(t, e, "q", "0", 100, 100, 100, 100)
	pushSized(t, e, "q", "1", 5000, 10)
	res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: "q", Partition: "1", Offset: 0, MaxBytes: 10}, // first record of the call: delivered although > maxBytes
		{Queue: "q", Partition: "0", Offset: 0, MaxBytes: 250},
		{Queue: "q", Partition: "1", Offset: 0, MaxBytes: 10}, // not first of the call: 5000 > 10, nothing
		{Queue: "q", Partition: "1", Offset: 1, MaxBytes: 10},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []int{1, 2, 0, 1} {
		if len(res[i].Records) != w {
			t.Errorf("entry %d: %d records, want %d", i, len(res[i].Records), w)
		}
	}
	if res[2].HighWatermark != 2 || res[2].Error != "" {
		t.Errorf("budget-starved entry must carry real bounds: %+v", res[2])
	}
	// maxBytes below 1 clamps to 1: only the first record of the call.
	st, raw := e.post("/api/v1/fetch", `{"entries":[{"queue":"q","partition":"0","offset":0,"maxBytes":0}]}`)
	v := wantStatus(t, st, raw, 200)
	if n := len(field(v, "entries", 0, "records").([]any)); n != 1 {
		t.Errorf("maxBytes 0: %d records", n)
	}
}

func TestFetchRecordCapPerEntry(t *testing.T) {
	e := newEnv(t, Options{})
	for i := 0; i < 3; i++ {
		e.pushN("q", "0", 4000)
	}
	res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 0, MaxBytes: 8 << 20}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res[0].Records) != maxRecordsPerEntry || res[0].Records[maxRecordsPerEntry-1].Offset != maxRecordsPerEntry-1 {
		t.Errorf("%d records", len(res[0].Records))
	}
}

// A parked fetch is woken by a push to a partition it names, long before
// its maxWaitMs, and answers with the new record.
func TestFetchLongPollWake(t *testing.T) {
	e := newEnv(t, Options{Dir: t.TempDir()})
	e.pushN("q", "0", 1)
	type out struct {
		res []queen.FetchResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{
			{Queue: "q", Partition: "0", Offset: 1},
			{Queue: "q", Partition: "5", Offset: 0}, // not yet written
		}, MaxWaitMs: 30000, MinBytes: 1})
		done <- out{res, err}
	}()
	waitParked(t, e.b, "q", "0")
	select {
	case o := <-done:
		t.Fatalf("fetch answered before any write: %+v %v", o.res, o.err)
	default:
	}
	// A write elsewhere does not answer it.
	e.pushN("other", "0", 1)
	select {
	case o := <-done:
		t.Fatalf("fetch answered on an unrelated write: %+v", o.res)
	case <-time.After(50 * time.Millisecond):
	}
	e.pushN("q", "5", 1)
	select {
	case o := <-done:
		if o.err != nil {
			t.Fatal(o.err)
		}
		if len(o.res[1].Records) != 1 || o.res[1].HighWatermark != 1 || len(o.res[0].Records) != 0 {
			t.Fatalf("woken answer %+v", o.res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("parked fetch not woken by the push")
	}
}

// waitParked waits (bounded) until a fetch is parked on queue/part.
func waitParked(t *testing.T, b *Broker, queue, part string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		b.mu.Lock()
		n := 0
		if q := b.st.tenant(DefaultTenant).queues[queue]; q != nil {
			if p := q.parts[part]; p != nil {
				n = len(p.waiters)
			}
		}
		b.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no fetch parked on %s/%s", queue, part)
}

func TestFetchNoParkCases(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 1)
	for name, body := range map[string]string{
		"minBytes 0":      `{"entries":[{"queue":"q","partition":"0","offset":1}],"maxWaitMs":30000,"minBytes":0}`,
		"negative min":    `{"entries":[{"queue":"q","partition":"0","offset":1}],"maxWaitMs":30000,"minBytes":-5}`,
		"entry has error": `{"entries":[{"queue":"q","partition":"0","offset":1},{"queue":"zz","offset":0}],"maxWaitMs":30000}`,
		"data available":  `{"entries":[{"queue":"q","partition":"0","offset":0}],"maxWaitMs":30000}`,
		"maxWait 0":       `{"entries":[{"queue":"q","partition":"0","offset":1}]}`,
		"negative wait":   `{"entries":[{"queue":"q","partition":"0","offset":1}],"maxWaitMs":-1}`,
	} {
		start := time.Now()
		st, raw := e.post("/api/v1/fetch", body)
		wantStatus(t, st, raw, 200)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s parked for %v", name, d)
		}
	}
}

// maxWaitMs elapses with nothing written: 200 with empty records (never 204).
func TestFetchWaitExpires(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 1)
	st, raw := e.post("/api/v1/fetch", `{"entries":[{"queue":"q","partition":"0","offset":1}],"maxWaitMs":250}`)
	v := wantStatus(t, st, raw, 200)
	if len(field(v, "entries", 0, "records").([]any)) != 0 || num(field(v, "entries", 0, "highWatermark")) != 1 {
		t.Errorf("got %s", raw)
	}
}

func TestFetchMaxWaitClamp(t *testing.T) {
	req, err := decodeFetch([]byte(`{"entries":[],"maxWaitMs":99999999}`))
	if err != nil {
		t.Fatal(err)
	}
	if req.maxWait != 30*time.Second {
		t.Errorf("maxWait %v", req.maxWait)
	}
}

// Drain answers parked fetches at once (graceful shutdown).
func TestFetchDrainAnswersParked(t *testing.T) {
	e := newEnv(t, Options{})
	e.pushN("q", "0", 1)
	done := make(chan error, 1)
	go func() {
		_, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 1}}, MaxWaitMs: 30000, MinBytes: 1})
		done <- err
	}()
	waitParked(t, e.b, "q", "0")
	e.b.Drain()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Drain did not answer the parked fetch")
	}
}

// ts never decreases along a partition even if the clock steps back.
func TestFetchTSMonotonic(t *testing.T) {
	clk := newFakeClock()
	e := newEnv(t, Options{Now: clk.Now})
	e.pushN("q", "0", 1)
	clk.Advance(-time.Hour)
	e.pushN("q", "0", 1)
	res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Records[1].TS < res[0].Records[0].TS {
		t.Errorf("ts went back: %s then %s", res[0].Records[0].TS, res[0].Records[1].TS)
	}
	if got := fmt.Sprint(queen.ParseTS(res[0].Records[0].TS).UnixMicro()); got != fmt.Sprint(newFakeClock().Now().UnixMicro()) {
		t.Errorf("ts %s is not the push commit time", res[0].Records[0].TS)
	}
}

// Below minBytes the fetch stays parked; the write that reaches it answers.
func TestFetchMinBytesAccumulates(t *testing.T) {
	e := newEnv(t, Options{})
	pushSized(t, e, "q", "0", 10)
	done := make(chan []queen.FetchResult, 1)
	go func() {
		res, err := e.qc.Fetch(ctx(t), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: "q", Partition: "0", Offset: 1}}, MaxWaitMs: 30000, MinBytes: 100})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitParked(t, e.b, "q", "0")
	pushSized(t, e, "q", "0", 50)
	select {
	case res := <-done:
		t.Fatalf("answered below minBytes: %+v", res)
	case <-time.After(300 * time.Millisecond): // spans at least one 200 ms re-check
	}
	pushSized(t, e, "q", "0", 60)
	select {
	case res := <-done:
		if len(res[0].Records) != 2 || res[0].Records[0].Offset != 1 {
			t.Fatalf("answer %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not answered once minBytes was reached")
	}
}

// TestScanFetchBody: the fast fetch decoder takes the facade's plain shape
// and agrees with encoding/json on it; anything unusual is left to
// encoding/json (ok false), which stays the authority for errors.
func TestScanFetchBody(t *testing.T) {
	for _, body := range []string{
		`{"entries":[{"queue":"orders","partition":"3","offset":41,"maxBytes":1048576},{"queue":"orders","partition":"9","offset":0,"maxBytes":1048576}],"maxWaitMs":500,"minBytes":1}`,
		`{"entries":[]}`,
		` { "entries" : [ { "queue" : "q" , "partition" : 7 , "offset" : 0 } ] , "other" : {"a":[1,2,{"b":null}]} } `,
		`{"entries":[{"queue":"q","partition":null,"offset":-0,"maxBytes":null}],"maxWaitMs":null}`,
		`{"minBytes":0,"entries":[{"offset":9223372036854775807,"queue":"q"}]}`,
		`{"entries":[{"queue":"q\u0041\n","offset":1}]}`, // escapes, decoded as encoding/json does
	} {
		if raw, ok := scanFetchBody([]byte(body)); !ok || raw.Entries == nil {
			t.Fatalf("the fast decoder refused %s", body)
		}
		checkFetchScan(t, []byte(body))
	}
	for _, body := range []string{
		`{"Entries":[]}`,                                            // case-folded key: encoding/json's matching
		`{"entries":[],"entries":[]}`,                               // a repeat decodes into the first's elements
		`{"entries":null}`,                                          // null array
		`{"entries":[null]}`,                                        // null element
		`{"entries":[{"queue":"q","offset":1.0}]}`,                  // a fraction
		`{"entries":[{"queue":"q","offset":1e3}]}`,                  // an exponent
		`{"entries":[{"queue":"q","offset":01}]}`,                   // a leading zero
		`{"entries":[{"queue":"q","offset":99999999999999999999}]}`, // past int64
		`{"entries":[{"queue":7,"offset":1}]}`,                      // a queue not a string
		`{"entries":[]} x`,                                          // trailing bytes
		`{"entries":[{"qUeue":"q","offset":1}]}`,                    // case-folded field
	} {
		if _, ok := scanFetchBody([]byte(body)); ok {
			t.Fatalf("the fast decoder took %s, which is encoding/json's", body)
		}
	}
}

// TestFirstWriteWakesOnlyItsWaiters: a fetch parked on a partition not
// written yet is woken when that partition is created, not by the first
// write to another partition of the queue (a consumer of 10,000 mostly
// unwritten partitions would otherwise re-read them all at every one).
func TestFirstWriteWakesOnlyItsWaiters(t *testing.T) {
	b, err := New(Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := b.st
	s.tenant(DefaultTenant).queues["q"] = newQueue("q", "id", 0, defaultOptions())
	w := newWaiter()
	b.mu.Lock()
	ev, err := b.evalFetch(DefaultTenant, &fetchRequest{entries: []fetchEntry{{queue: "q", part: "5", maxBytes: 1}}}, w)
	b.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	ev.close()
	write := func(part string) {
		t.Helper()
		b.mu.Lock()
		plan, err := b.planPush(DefaultTenant, []pushItem{{queue: "q", part: part, payload: []byte("1")}}, time.Now(), b.db, nil)
		if err != nil {
			b.mu.Unlock()
			t.Fatal(err)
		}
		batch := b.db.NewBatch()
		pd := b.apply(batch, plan.write(batch, s))
		b.mu.Unlock()
		if err := pd.wait(); err != nil {
			t.Fatal(err)
		}
	}
	woken := func() bool {
		select {
		case <-w.ch:
			return true
		default:
			return false
		}
	}
	write("7")
	if woken() {
		t.Fatal("the first write to partition 7 woke a fetch parked on partition 5 only")
	}
	write("5")
	if !woken() {
		t.Fatal("the first write to partition 5 did not wake the fetch parked on it")
	}
	if len(s.tenant(DefaultTenant).queues["q"].waiters) != 0 {
		t.Fatal("the woken fetch is still filed under the queue")
	}
}
