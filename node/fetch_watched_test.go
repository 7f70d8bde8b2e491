package node

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/fetchwatch"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// queenCall is one fetch call as the dev broker received it.
type queenCall struct {
	entries, maxWaitMs, minBytes int
	first                        string // its first entry's partition
}

// fetchCalls records the fetch calls a dev broker receives.
type fetchCalls struct {
	mu       sync.Mutex
	calls    []queenCall
	inflight int // parked calls the broker is holding now
}

// waitSettled waits until a parked call has arrived since call n and the
// broker holds exactly the calls the node has parked, steadily: a watch
// answered by a write parks again from its own goroutines (a regroup may
// re-park several groups), so counting before they have all arrived would
// take them for a later fetch's own.
func (f *fetchCalls) waitSettled(t *testing.T, node *Node, n int) {
	t.Helper()
	steady, last := 0, -1
	require.Eventually(t, func() bool {
		f.mu.Lock()
		count, inflight := len(f.calls), f.inflight
		f.mu.Unlock()
		parkedSince := 0
		for _, c := range f.since(n) {
			if c.maxWaitMs == int(fetchwatch.DefaultWait/time.Millisecond) {
				parkedSince++
			}
		}
		if parkedSince == 0 || inflight != node.parked.Parked() || count != last {
			steady, last = 0, count
			return false
		}
		steady++
		return steady >= 5
	}, 10*time.Second, 10*time.Millisecond, "the watch parked again")
}

func (f *fetchCalls) since(n int) []queenCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]queenCall(nil), f.calls[n:]...)
}

func (f *fetchCalls) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

// waitParked waits until the broker has received as many parked calls
// (those waiting the watch's DefaultWait) since call n as the node holds
// parked: a watch sends each from its own goroutine, so a fetch can return
// before they arrive, and a later count would take them for its own.
func (f *fetchCalls) waitParked(t *testing.T, node *Node, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		parked := 0
		for _, c := range f.since(n) {
			if c.maxWaitMs == int(fetchwatch.DefaultWait/time.Millisecond) {
				parked++
			}
		}
		return parked >= node.parked.Parked()
	}, 10*time.Second, time.Millisecond, "the parked calls at the broker")
}

// watchEnv is a node over a dev broker that records its fetch calls, with
// topic "wide" of parts partitions.
func watchEnv(t *testing.T, parts int) (*dataEnv, *fetchCalls) {
	t.Helper()
	calls := &fetchCalls{}
	e := &dataEnv{t: t}
	b := devbroker.Start(t, dev.Options{SweepInterval: -1}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v1/fetch" {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					// A parked call cancelled while its body was on the way
					// (the watch regrouped): the caller is gone.
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				var req struct {
					Entries []struct {
						Partition string `json:"partition"`
					} `json:"entries"`
					MaxWaitMs int `json:"maxWaitMs"`
					MinBytes  int `json:"minBytes"`
				}
				if err := json.Unmarshal(body, &req); err != nil {
					t.Errorf("fetch body %q: %v", body, err)
				}
				c := queenCall{entries: len(req.Entries), maxWaitMs: req.MaxWaitMs, minBytes: req.MinBytes}
				if len(req.Entries) > 0 {
					c.first = req.Entries[0].Partition
				}
				parked := req.MaxWaitMs == int(fetchwatch.DefaultWait/time.Millisecond)
				calls.mu.Lock()
				calls.calls = append(calls.calls, c)
				if parked {
					calls.inflight++
				}
				calls.mu.Unlock()
				if parked {
					defer func() {
						calls.mu.Lock()
						calls.inflight--
						calls.mu.Unlock()
					}()
				}
			}
			h.ServeHTTP(w, r)
		})
	})
	e.url, e.q = b.URL, b.Client
	e.n = e.node(map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(parts)})
	t.Cleanup(func() {
		// Before the broker closes: it would wait out the parked calls.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = e.n.Shutdown(ctx)
	})
	e.c = e.conn(e.n)
	e.createTopic("wide")
	return e, calls
}

// wideParts is every partition of "wide" from offset 0.
func wideParts(n int) []fetchPart {
	ps := make([]fetchPart, n)
	for p := range ps {
		ps[p] = fetchPart{"wide", int32(p), 0, 1 << 20}
	}
	return ps
}

// waitingReq is a session's fetch waiting up to waitMs for one byte.
func waitingReq(id, epoch int32, waitMs int32, parts ...fetchPart) *kmsg.FetchRequest {
	req := sessionReq(12, id, epoch, parts...)
	req.MaxWaitMillis, req.MinBytes = waitMs, 1
	return req
}

// TestWatchedFetchWaitsOnParkedCalls: a session of 2,000 partitions (two
// Queen calls wide). Its first incremental fetch reads every partition it
// does not know at once, then parks them at Queen in calls of 256 waiting
// for a write; those calls outlive the fetch. A record written while the
// next fetch waits answers it at once, alone, and costs Queen one call (the
// group parked again), not a read of every partition; the fetch after that
// asks Queen nothing. Closing the session cancels the parked calls.
func TestWatchedFetchWaitsOnParkedCalls(t *testing.T) {
	const parts = 2000
	e, calls := watchEnv(t, parts)
	full := e.fetch(sessionReq(12, 0, 0, wideParts(parts)...))
	id := full.SessionID
	require.Positive(t, id)

	n := calls.count()
	inc := e.fetch(waitingReq(id, 1, 200))
	require.Empty(t, inc.Topics, "nothing was written")
	calls.waitParked(t, e.n, n)
	var read, parked int
	for _, c := range calls.since(n) {
		switch {
		case c.maxWaitMs == 0:
			read += c.entries
			require.LessOrEqual(t, c.entries, 1024)
		case c.maxWaitMs == int(fetchwatch.DefaultWait/time.Millisecond):
			require.Equal(t, 1, c.minBytes)
			require.LessOrEqual(t, c.entries, fetchwatch.DefaultGroup)
			parked += c.entries
		default:
			t.Fatalf("a call waiting %d ms", c.maxWaitMs)
		}
	}
	require.Equal(t, parts, read, "the first incremental fetch reads what the watch does not know")
	require.Equal(t, parts, parked, "then every partition is parked")
	require.Equal(t, (parts+fetchwatch.DefaultGroup-1)/fetchwatch.DefaultGroup, e.n.parked.Parked())

	n = calls.count()
	go func() {
		time.Sleep(100 * time.Millisecond)
		e.produce("wide", 1500, oneRecord(t, "late"))
	}()
	start := time.Now()
	inc = e.fetch(waitingReq(id, 2, 20_000))
	require.Less(t, time.Since(start), 15*time.Second, "woken by the write, not by max_wait_ms")
	require.Equal(t, map[string]int{"wide/1500": 1}, answered(t, inc))
	require.Eventually(t, func() bool { return calls.count() == n+1 }, 5*time.Second, time.Millisecond)
	again := calls.since(n)[0]
	require.Equal(t, fetchwatch.DefaultGroup, again.entries, "the answered group parked again, whole")

	// The client moved partition 1500 past the record; nothing else: quiet.
	n = calls.count()
	inc = e.fetch(waitingReq(id, 3, 100, fetchPart{"wide", 1500, 1, 1 << 20}))
	require.Empty(t, inc.Topics)
	require.Equal(t, n, calls.count(), "a quiet fetch asks Queen nothing")

	// Closing the session cancels its calls.
	e.fetch(sessionReq(12, id, -1, wideParts(parts)...))
	require.Eventually(t, func() bool { return e.n.parked.Parked() == 0 }, 5*time.Second, time.Millisecond)
}

// TestWatchedFetchTakesWhatArrivedBetweenFetches: a record written while no
// fetch waits is read by the parked call and answered by the next fetch at
// once, from what the call read.
func TestWatchedFetchTakesWhatArrivedBetweenFetches(t *testing.T) {
	const parts = 1100
	e, calls := watchEnv(t, parts)
	id := e.fetch(sessionReq(12, 0, 0, wideParts(parts)...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics)

	n := calls.count()
	e.produce("wide", 7, oneRecord(t, "between"))
	calls.waitSettled(t, e.n, n)
	n = calls.count()
	inc := e.fetch(waitingReq(id, 2, 20_000))
	require.Equal(t, map[string]int{"wide/7": 1}, answered(t, inc))
	require.Equal(t, n, calls.count(), "answered from what the parked call read")
}

// TestWatchedFetchFollowsTheClient: a client that moves a partition back (a
// seek) is answered from where it asked, and one whose answer did not fit
// the response budget gets the rest next time.
func TestWatchedFetchFollowsTheClient(t *testing.T) {
	const parts = 1100
	e, _ := watchEnv(t, parts)
	for range 3 {
		e.produce("wide", 3, oneRecord(t, "r"))
	}
	ps := wideParts(parts)
	ps[3].offset = 3
	id := e.fetch(sessionReq(12, 0, 0, ps...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics)

	inc := e.fetch(waitingReq(id, 2, 5000, fetchPart{"wide", 3, 1, 1 << 20}))
	require.Equal(t, map[string]int{"wide/3": 2}, answered(t, inc), "read again from offset 1")

	// Two partitions' records, a response budget for about one.
	big := bytes.Repeat([]byte("v"), 3000)
	e.produce("wide", 900, oneRecord(t, string(big)))
	e.produce("wide", 901, oneRecord(t, string(big)))
	req := waitingReq(id, 3, 5000, fetchPart{"wide", 3, 3, 1 << 20})
	req.MaxBytes = 3500
	inc = e.fetch(req)
	got := answered(t, inc)
	var taken int32 = -1
	for k, recs := range got {
		if recs > 0 {
			require.Equal(t, int32(-1), taken, "one fits: %v", got)
			p, _ := strconv.Atoi(k[len("wide/"):])
			taken = int32(p)
		}
	}
	require.NotEqual(t, int32(-1), taken, "one fits: %v", got)
	other := int32(900 + 901 - int(taken))
	inc = e.fetch(waitingReq(id, 4, 5000, fetchPart{"wide", taken, 1, 1 << 20}))
	require.Equal(t, map[string]int{"wide/" + strconv.Itoa(int(other)): 1}, answered(t, inc), "the other one, next time")
}

// TestWatchedFetchPastTheNodeBound: with the node's parked calls used up,
// a watched fetch still waits for a write (the plain way) and answers it.
func TestWatchedFetchPastTheNodeBound(t *testing.T) {
	const parts = 1100
	e, _ := watchEnv(t, parts)
	e.n.parked = fetchwatch.NewCalls(1, 0)
	id := e.fetch(sessionReq(12, 0, 0, wideParts(parts)...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics)
	go func() {
		time.Sleep(300 * time.Millisecond)
		e.produce("wide", 1099, oneRecord(t, "late"))
	}()
	start := time.Now()
	inc := e.fetch(waitingReq(id, 2, 20_000))
	require.Equal(t, map[string]int{"wide/1099": 1}, answered(t, inc))
	require.Less(t, time.Since(start), 15*time.Second)
}

// TestWatchedFetchCancelledByStop: a node that stops cancels its sessions'
// parked calls at once.
func TestWatchedFetchCancelledByStop(t *testing.T) {
	const parts = 1100
	e, _ := watchEnv(t, parts)
	id := e.fetch(sessionReq(12, 0, 0, wideParts(parts)...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics)
	require.Positive(t, e.n.parked.Parked())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, e.n.Shutdown(ctx))
	require.Eventually(t, func() bool { return e.n.parked.Parked() == 0 }, 5*time.Second, time.Millisecond)
}

// TestWatchedFetchDoesNotStarveAQuietNeighbour: a partition with more
// records than a response holds stays busy fetch after fetch, so its
// group's call cannot be parked; its quiet neighbour in the group is then
// read by every fetch, and a record written to it is answered within a
// couple of fetches, not once the busy one is drained.
func TestWatchedFetchDoesNotStarveAQuietNeighbour(t *testing.T) {
	const parts = 1100
	e, _ := watchEnv(t, parts)
	big := string(bytes.Repeat([]byte("v"), 3000))
	for range 20 {
		e.produce("wide", 5, oneRecord(t, big))
	}
	ps := wideParts(parts)
	ps[5].offset = 20
	id := e.fetch(sessionReq(12, 0, 0, ps...)).SessionID
	require.Empty(t, e.fetch(waitingReq(id, 1, 50)).Topics)

	// The client goes back to partition 5's start: 20 records of 3 KB to
	// drain, one or two a fetch.
	next := int64(0)
	epoch := int32(2)
	fetch := func() map[string]int {
		req := waitingReq(id, epoch, 5000, fetchPart{"wide", 5, next, 1 << 20})
		req.MaxBytes = 8 << 10
		epoch++
		inc := e.fetch(req)
		got := answered(t, inc)
		next += int64(got["wide/5"])
		return got
	}
	require.Positive(t, fetch()["wide/5"])
	e.produce("wide", 7, oneRecord(t, "quiet neighbour"))
	for i := 0; i < 3; i++ {
		if got := fetch(); got["wide/7"] == 1 {
			require.Less(t, next, int64(20), "answered before partition 5 was drained")
			return
		}
	}
	t.Fatalf("partition 7's record not answered in 3 fetches (partition 5 at %d of 20)", next)
}

// TestWatchedSessionlessFetch: a sessionless client (epoch -1, as
// librdkafka fetches) naming 2,000 partitions in every fetch is watched
// through its connection: its first fetch reads them all and parks them;
// a fetch that finds nothing new asks Queen nothing and still answers every
// partition, each with its high watermark and log start offset; a record
// written while a fetch waits is answered at once beside them; a moved
// offset is read from there; closing the connection cancels the calls.
func TestWatchedSessionlessFetch(t *testing.T) {
	const parts = 2000
	e, calls := watchEnv(t, parts)
	for range 2 {
		e.produce("wide", 42, oneRecord(t, "old"))
	}
	ps := wideParts(parts)
	ps[42].offset = 2
	sessionless := func(waitMs int32) *kmsg.FetchResponse {
		req := sessionReq(12, 0, -1, ps...)
		req.MaxWaitMillis, req.MinBytes = waitMs, 1
		return e.fetch(req)
	}
	everyPartition := func(resp *kmsg.FetchResponse) map[int32]kmsg.FetchResponseTopicPartition {
		t.Helper()
		got := map[int32]kmsg.FetchResponseTopicPartition{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				got[rp.Partition] = rp
			}
		}
		require.Len(t, got, parts, "a sessionless answer carries every partition")
		return got
	}

	first := everyPartition(sessionless(50))
	require.Equal(t, int64(2), first[42].HighWatermark)
	require.Positive(t, e.n.parked.Parked(), "parked after the first fetch")
	calls.waitParked(t, e.n, 0)

	n := calls.count()
	quiet := everyPartition(sessionless(50))
	require.Equal(t, n, calls.count(), "nothing new: Queen is not asked")
	for p, rp := range quiet {
		require.Zero(t, rp.ErrorCode)
		require.Empty(t, rp.RecordBatches)
		require.Equal(t, ps[p].offset, rp.HighWatermark, "partition %d", p)
		require.Equal(t, int64(0), rp.LogStartOffset, "partition %d", p)
	}

	go func() {
		time.Sleep(100 * time.Millisecond)
		e.produce("wide", 1999, oneRecord(t, "late"))
	}()
	start := time.Now()
	woken := everyPartition(sessionless(20_000))
	require.Less(t, time.Since(start), 15*time.Second)
	n1999, _ := batchRecords(woken[1999].RecordBatches)
	require.Equal(t, 1, n1999)
	require.Equal(t, int64(1), woken[1999].HighWatermark)
	require.Equal(t, int64(2), woken[42].HighWatermark)

	ps[1999].offset = 1
	ps[42].offset = 0 // a seek back
	moved := everyPartition(sessionless(5000))
	n42, _ := batchRecords(moved[42].RecordBatches)
	require.Equal(t, 2, n42, "read again from offset 0")

	e.c.Close()
	require.Eventually(t, func() bool { return e.n.parked.Parked() == 0 }, 5*time.Second, time.Millisecond)
}

// TestSessionlessFetchReadsARepeatedPartitionOnce: a sessionless fetch
// naming one partition 5,000 times, waiting or not, is one read of one
// entry at Queen and one answer, as Kafka reads a fetch's partitions into
// a map; without that, 5,000 entries cost five Queen calls, and a 100 MiB
// frame of them 6,400.
func TestSessionlessFetchReadsARepeatedPartitionOnce(t *testing.T) {
	e, calls := watchEnv(t, 4)
	e.produce("wide", 2, oneRecord(t, "only"))
	ps := make([]fetchPart, 5000)
	for i := range ps {
		ps[i] = fetchPart{"wide", 2, 0, 1 << 20}
	}
	for _, waitMs := range []int32{0, 50} {
		n := calls.count()
		req := sessionReq(12, 0, -1, ps...)
		req.MaxWaitMillis, req.MinBytes = waitMs, 1
		resp := e.fetch(req)
		require.Equal(t, 1, len(resp.Topics))
		require.Equal(t, 1, len(resp.Topics[0].Partitions), "one answer for the partition")
		got, _ := batchRecords(resp.Topics[0].Partitions[0].RecordBatches)
		require.Equal(t, 1, got)
		entries := 0
		for _, c := range calls.since(n) {
			entries += c.entries
		}
		require.Equal(t, 1, entries, "wait %d ms: Queen asked about the partition once", waitMs)
	}
}
