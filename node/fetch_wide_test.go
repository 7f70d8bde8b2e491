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

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/fetchread"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// queenFetchCall is one fetch call as the dev broker saw it.
type queenFetchCall struct {
	entries  int
	maxBytes []int // each entry's maxBytes
	answered int   // body bytes of the answer
}

// countingWriter counts the body bytes of an answer, before they leave:
// the caller may have the whole answer as soon as the last Write is sent.
type countingWriter struct {
	http.ResponseWriter
	count func(int)
}

func (w *countingWriter) Write(b []byte) (int, error) {
	w.count(len(b))
	return w.ResponseWriter.Write(b)
}

// TestFetchWideCarriesResponseBudget: a fetch of 2,500 partitions (three
// Queen chunks) whose data is far past the response budget asks no entry for
// more than the response has left, asks no chunk once the response is full,
// and answers within the budget. Before, every chunk was read in full
// (every entry asking its partition budget) and all three answers held
// before the budget was applied.
func TestFetchWideCarriesResponseBudget(t *testing.T) {
	const parts = 2500
	var (
		mu    sync.Mutex
		calls []*queenFetchCall
	)
	e := &dataEnv{t: t}
	b := devbroker.Start(t, dev.Options{SweepInterval: -1}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/api/v1/fetch" {
				h.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			var req struct {
				Entries []struct {
					MaxBytes int `json:"maxBytes"`
				} `json:"entries"`
			}
			require.NoError(t, json.Unmarshal(body, &req))
			// Filed before it is served: the node may answer its own
			// fetch before this handler returns.
			c := &queenFetchCall{entries: len(req.Entries)}
			for _, en := range req.Entries {
				c.maxBytes = append(c.maxBytes, en.MaxBytes)
			}
			mu.Lock()
			calls = append(calls, c)
			mu.Unlock()
			h.ServeHTTP(&countingWriter{ResponseWriter: w, count: func(n int) {
				mu.Lock()
				c.answered += n
				mu.Unlock()
			}}, r)
		})
	})
	e.url, e.q = b.URL, b.Client
	e.n = e.node(map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": strconv.Itoa(parts)})
	e.c = e.conn(e.n)
	e.createTopic("wide")

	// One record of 2,000 bytes in every partition: 5 MB in all, some
	// 6.7 MB stored, against a response budget of 256 KiB.
	value := bytes.Repeat([]byte("v"), 2000)
	items := make([]queen.PushItem, parts)
	for p := range items {
		items[p] = queen.PushItem{Queue: "wide", Partition: strconv.Itoa(p), Payload: envelope.Append(nil, &envelope.Record{Value: value, Timestamp: 1})}
	}
	_, err := e.q.Push(context.Background(), items)
	require.NoError(t, err)

	const budget = 256 << 10
	var ps []fetchPart
	for p := int32(0); p < parts; p++ {
		ps = append(ps, fetchPart{"wide", p, 0, 1 << 20})
	}
	resp := e.fetch(fetchReq(6, 0, 1, budget, ps...))

	// The response: within its budget, filled in request order.
	total, filled := 0, 0
	for i, p := range resp.Topics[0].Partitions {
		require.Equal(t, int16(0), p.ErrorCode, "partition %d", i)
		total += len(p.RecordBatches)
		if len(p.RecordBatches) > 0 {
			require.Equal(t, filled, i, "partitions fill in request order")
			filled++
		}
	}
	require.LessOrEqual(t, total, budget)
	require.Greater(t, filled, 100, "the budget is used")

	// What Queen was asked: no entry more than the response budget (in
	// stored bytes), and the chunks past the full response never.
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 1, len(calls), "the first chunk fills the response; the other two are not asked")
	answered := 0
	for _, c := range calls {
		require.LessOrEqual(t, c.entries, queen.MaxFetchEntries)
		for _, mb := range c.maxBytes {
			require.LessOrEqual(t, mb, fetchread.StoredBytes(budget), "an entry asks at most what the response has left")
		}
		answered += c.answered
	}
	// One chunk's answer (1,024 records of some 2.8 KB rendered), not the
	// whole topic's (2,500 of them).
	require.Less(t, answered, 1100*3000)
}

// TestFetchChunkRefusedFailsOnlyItsPartitions: a 413 on one chunk's call
// (refused whole, refused again if resent) fails that chunk's partitions
// only; the other chunk is read and answered.
func TestFetchChunkRefusedFailsOnlyItsPartitions(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "1100"})
	e.createTopic("wide")
	e.produce("wide", 1099, batchtestRecords(t))
	var ps []fetchPart
	for p := int32(0); p < 1100; p++ {
		ps = append(ps, fetchPart{"wide", p, 0, 1 << 20})
	}
	e.fault(map[string]any{"route": "fetch", "status": 413, "count": 1})
	resp := e.fetch(fetchReq(6, 0, 1, 1<<20, ps...))
	got := resp.Topics[0].Partitions
	for i := 0; i < queen.MaxFetchEntries; i++ {
		require.Equal(t, kerr.UnknownServerError.Code, got[i].ErrorCode, "partition %d is in the refused chunk", i)
	}
	for i := queen.MaxFetchEntries; i < 1100; i++ {
		require.Equal(t, int16(0), got[i].ErrorCode, "partition %d is in the chunk read", i)
	}
	_, recs := readBatch(t, got[1099].RecordBatches)
	require.Len(t, recs, 3)
}

func batchtestRecords(t *testing.T) []byte {
	return batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
}
