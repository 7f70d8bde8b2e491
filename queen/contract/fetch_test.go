package contract

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/queen"
)

// §6 boundary cases: unknown queue, offset at / past the high watermark,
// never-written partition, idempotent reads, no queue creation.
func TestFetchBoundaries(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("bounds")
	pushN(t, c, q, "0", 5)
	missing := uniq("nope")
	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: missing, Partition: "0", Offset: 0},
		{Queue: q, Partition: "0", Offset: 5}, // == hwm
		{Queue: q, Partition: "0", Offset: 6}, // > hwm
		{Queue: q, Partition: "7", Offset: 0}, // never written: empty log
		{Queue: q, Partition: "7", Offset: 1}, // > its hwm 0
		{Queue: q, Partition: "0", Offset: 2}, // mid-log
		{Queue: q, Partition: "0", Offset: 0}, // the same partition twice
	}, MaxWaitMs: 2000, MinBytes: 1}))
	check := func(i int, errCode string, hwm, lso int64, n int) {
		t.Helper()
		e := fr[i]
		if e.Error != errCode || e.HighWatermark != hwm || e.LogStartOffset != lso || len(e.Records) != n {
			t.Fatalf("entry %d: %+v; want error %q hwm %d lso %d %d records", i, e, errCode, hwm, lso, n)
		}
	}
	check(0, queen.FetchErrUnknownTopic, 0, 0, 0)
	check(1, "", 5, 0, 0)
	check(2, queen.FetchErrOutOfRange, 5, 0, 0)
	check(3, "", 0, 0, 0)
	check(4, queen.FetchErrOutOfRange, 0, 0, 0)
	check(5, "", 5, 0, 3)
	check(6, "", 5, 0, 5)
	if fr[5].Records[0].Offset != 2 {
		t.Fatalf("mid-log read starts at %d", fr[5].Records[0].Offset)
	}
	if _, ok := findQueue(t, c, missing); ok {
		t.Fatal("fetch created a queue")
	}
	// Two identical fetches return identical records (no cursor moves).
	a, b := fetchOne(t, c, q, "0", 0), fetchOne(t, c, q, "0", 0)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("fetch not repeatable:\n%+v\n%+v", a, b)
	}
}

// An entry with an error answers at once even with a long maxWaitMs.
func TestFetchErrorAnswersAtOnce(t *testing.T) {
	c := shared.client(t, "")
	start := time.Now()
	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: uniq("absent"), Partition: "0"},
	}, MaxWaitMs: 5000, MinBytes: 1}))
	if fr[0].Error != queen.FetchErrUnknownTopic || time.Since(start) > 4*time.Second {
		t.Fatalf("%+v after %v", fr[0], time.Since(start))
	}
}

// Long poll: parked on the high watermark, woken by a push to that
// partition; minBytes 0 never parks; maxWaitMs elapses with an empty answer.
func TestFetchLongPoll(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("poll")
	pushN(t, c, q, "0", 1)
	pushN(t, c, q, "1", 1)

	got := make(chan queen.FetchResult, 1)
	start := time.Now()
	go func() {
		fr, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
			{Queue: q, Partition: "0", Offset: 1}, {Queue: q, Partition: "1", Offset: 1},
		}, MaxWaitMs: 20000, MinBytes: 1})
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		got <- fr[1]
	}()
	time.Sleep(300 * time.Millisecond)
	pushN(t, c, q, "1", 1)
	select {
	case e := <-got:
		if len(e.Records) != 1 || e.Records[0].Offset != 1 {
			t.Fatalf("woken fetch: %+v", e)
		}
		if time.Since(start) > 15*time.Second {
			t.Fatalf("long poll was not woken by the push (%v)", time.Since(start))
		}
	case <-time.After(25 * time.Second):
		t.Fatal("long poll never answered")
	}

	// maxWaitMs elapses: 200 with empty records, not earlier.
	start = time.Now()
	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 1}}, MaxWaitMs: 400, MinBytes: 1}))
	if el := time.Since(start); len(fr[0].Records) != 0 || fr[0].Error != "" || el < 350*time.Millisecond {
		t.Fatalf("%+v after %v", fr[0], el)
	}
	// minBytes 0: never park.
	start = time.Now()
	must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 1}}, MaxWaitMs: 20000, MinBytes: 0}))
	if el := time.Since(start); el > 10*time.Second {
		t.Fatalf("minBytes 0 parked for %v", el)
	}
	// minBytes larger than what is there: parks until maxWaitMs, then
	// answers with what it has.
	start = time.Now()
	fr = must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 0}}, MaxWaitMs: 400, MinBytes: 1 << 20}))
	if el := time.Since(start); len(fr[0].Records) != 1 || el < 350*time.Millisecond {
		t.Fatalf("minBytes above the data: %+v after %v", fr[0], el)
	}
}

// Budgets: maxBytes is soft and the first record of the call is always
// delivered, so one record over the budget still comes back.
func TestFetchByteBudget(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("budget")
	big := strings.Repeat("x", 4096)
	items := make([]queen.PushItem, 4)
	for i := range items {
		items[i] = queen.PushItem{Queue: q, Partition: "0", Payload: env("", big, -1)}
	}
	must[[]queen.PushResult](t)(c.Push(ctx, items))
	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 0, MaxBytes: 1}}, MinBytes: 1}))
	if len(fr[0].Records) != 1 || fr[0].Records[0].Offset != 0 || fr[0].HighWatermark != 4 {
		t.Fatalf("maxBytes 1: %d records, hwm %d", len(fr[0].Records), fr[0].HighWatermark)
	}
	fr = must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 0, MaxBytes: 6000}}, MinBytes: 1}))
	if n := len(fr[0].Records); n < 1 || n > 2 {
		t.Fatalf("maxBytes 6000 over 4 KiB records: %d records", n)
	}
	fr = must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: q, Partition: "0", Offset: 0}}, MinBytes: 1}))
	if len(fr[0].Records) != 4 {
		t.Fatalf("default budget: %d records", len(fr[0].Records))
	}
	// At most 10 000 records per entry, whatever the byte budget.
	small := uniq("small")
	for i := 0; i < 11; i++ {
		pushN(t, c, small, "0", 1000)
	}
	fr = must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{
		{Queue: small, Partition: "0", Offset: 0, MaxBytes: 8 << 20}}, MinBytes: 1}))
	if n := len(fr[0].Records); n != 10000 || fr[0].HighWatermark != 11000 {
		t.Fatalf("records per entry: %d (hwm %d), want the 10 000 cap", n, fr[0].HighWatermark)
	}
}

// Refusals: negative offset, more than 1024 entries, bad bodies: 400 for
// the whole batch. Accepted: 0 and 1024 entries, integer partitions, a
// missing partition ("Default").
func TestFetchRequestValidation(t *testing.T) {
	c := shared.client(t, "")
	q := uniq("fv")
	pushN(t, c, q, "4", 1)
	pushN(t, c, q, "Default", 1)

	_, err := c.Fetch(ctx, queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: q, Partition: "4", Offset: -1}}})
	mustKind(t, err, queen.KindBadRequest)
	many := make([]queen.FetchEntry, 1025)
	for i := range many {
		many[i] = queen.FetchEntry{Queue: q, Partition: "4"}
	}
	_, err = c.Fetch(ctx, queen.FetchRequest{Entries: many})
	mustKind(t, err, queen.KindBadRequest)
	fr := must[[]queen.FetchResult](t)(c.Fetch(ctx, queen.FetchRequest{Entries: many[:1024]}))
	if len(fr) != 1024 || len(fr[1023].Records) != 1 {
		t.Fatalf("1024 entries: %d results", len(fr))
	}
	for name, body := range map[string]string{
		"bad json":         `{"entries":[`,
		"entries missing":  `{"maxWaitMs":0}`,
		"entries object":   `{"entries":{}}`,
		"negative offset":  `{"entries":[{"queue":"` + q + `","partition":"4","offset":0},{"queue":"` + q + `","partition":"4","offset":-2}]}`,
		"offset string":    `{"entries":[{"queue":"` + q + `","partition":"4","offset":"0"}]}`,
		"offset fraction":  `{"entries":[{"queue":"` + q + `","partition":"4","offset":1.5}]}`,
		"offset missing":   `{"entries":[{"queue":"` + q + `","partition":"4"}]}`,
		"queue missing":    `{"entries":[{"partition":"4","offset":0}]}`,
		"maxWaitMs string": `{"entries":[],"maxWaitMs":"5"}`,
	} {
		t.Run(name, func(t *testing.T) {
			r := shared.raw(t, "POST", "/api/v1/fetch", "", body)
			if r.Status != 400 {
				t.Fatalf("status %d %s", r.Status, r.Body)
			}
		})
	}
	if r := shared.raw(t, "POST", "/api/v1/fetch", "", `{"entries":[]}`); r.Status != 200 || strings.ReplaceAll(string(r.Body), " ", "") != `{"entries":[]}` {
		t.Fatalf("empty entries: %d %s", r.Status, r.Body)
	}
	r := shared.raw(t, "POST", "/api/v1/fetch", "", `{"entries":[{"queue":"`+q+`","partition":4,"offset":0},{"queue":"`+q+`","offset":0},{"queue":"`+q+`","partition":null,"offset":0}],"maxWaitMs":99999999}`)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	entries := r.json(t)["entries"].([]any)
	for i, want := range []string{"4", "Default", "Default"} {
		e := entries[i].(map[string]any)
		if e["partition"] != want || len(e["records"].([]any)) != 1 {
			t.Fatalf("entry %d: %v (want partition %q with its record)", i, e, want)
		}
	}
}
