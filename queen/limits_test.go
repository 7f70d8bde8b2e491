package queen

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// flood is a reply that streams up to total bytes of body (a JSON-looking
// prefix, then filler), counting what was written, until the client stops
// reading. With declare it announces its length up front.
func flood(total int64, declare bool, served *atomic.Int64, done chan<- struct{}) func(http.ResponseWriter, *http.Request, string) {
	return func(w http.ResponseWriter, _ *http.Request, _ string) {
		defer close(done)
		w.Header().Set("Content-Type", "application/json")
		if declare {
			w.Header().Set("Content-Length", strconv.FormatInt(total, 10))
		}
		w.WriteHeader(http.StatusOK)
		chunk := []byte(`{"entries":[` + strings.Repeat(" ", 64<<10-12))
		for served.Load() < total {
			n, err := w.Write(chunk)
			served.Add(int64(n))
			if err != nil {
				return
			}
			chunk = []byte(strings.Repeat(" ", 64<<10))
		}
	}
}

// An answer far longer than its route may answer is refused as a broken
// answer after reading at most the route's limit: the client never holds
// the whole of it.
func TestAnswerOverLimitIsRefusedUnread(t *testing.T) {
	const total = 2 << 30 // far past any route's limit
	// What sits in socket buffers between the server's writes and the
	// client's reads: the server counts it as served, the client never
	// read it.
	const buffered = 32 << 20
	fetchReq := FetchRequest{Entries: []FetchEntry{{Queue: "t", Partition: "0", Offset: 0, MaxBytes: 1 << 20}}}
	cases := []struct {
		name    string
		declare bool
		limit   int64
		call    func(*Client) error
	}{
		{"fetch streamed", false, fetchAnswerLimit(fetchReq), func(c *Client) error {
			_, err := c.Fetch(context.Background(), fetchReq)
			return err
		}},
		{"fetch declared", true, fetchAnswerLimit(fetchReq), func(c *Client) error {
			_, err := c.Fetch(context.Background(), fetchReq)
			return err
		}},
		{"kv streamed", false, maxKVAnswer, func(c *Client) error {
			_, err := c.KV(context.Background(), []KVOp{{Op: OpGet, NS: "queen-kafka", Key: "qk:x"}})
			return err
		}},
		{"configure streamed", false, maxSmallAnswer, func(c *Client) error {
			_, err := c.Configure(context.Background(), "t", nil)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var served atomic.Int64
			done := make(chan struct{})
			f := newFake(t, flood(total, tc.declare, &served, done))
			err := tc.call(f.client(t, ""))
			mustKind(t, err, KindProtocol)
			require.Contains(t, err.Error(), "answer longer than")
			<-done // the server saw the client go
			if tc.declare {
				require.Less(t, served.Load(), int64(buffered), "a declared over-long body is refused before its bytes")
			}
			require.LessOrEqual(t, served.Load(), tc.limit+buffered, "served %d bytes for a limit of %d", served.Load(), tc.limit)
		})
	}
}

// An error body is read only as far as it is copied (§0.1): a flood of a
// 500 costs its first bytes, not the whole of it.
func TestErrorBodyIsReadCutShort(t *testing.T) {
	var served atomic.Int64
	done := make(chan struct{})
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, body string) {
		defer close(done)
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("e", 64<<10))
		for served.Load() < 2<<30 {
			n, err := w.Write(chunk)
			served.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	_, err := f.client(t, "").Queues(context.Background())
	mustKind(t, err, KindServer)
	<-done
	require.LessOrEqual(t, served.Load(), int64(maxErrorBody+32<<20))
}

// A route's limit holds what the contract lets it answer: the largest
// fetch answer §6 allows (the first record of the call at 64 MiB on its own)
// fits the limit of a one-entry request.
func TestFetchAnswerLimitHoldsTheContractMaximum(t *testing.T) {
	req := FetchRequest{Entries: []FetchEntry{{Queue: "t", Partition: "0", MaxBytes: 1}}}
	require.Greater(t, fetchAnswerLimit(req), int64(maxFetchRendered+fetchRecordFrame+fetchEntryFrame))
	wide := FetchRequest{Entries: make([]FetchEntry, MaxFetchEntries)}
	require.Greater(t, fetchAnswerLimit(wide)-fetchAnswerLimit(FetchRequest{}), int64(MaxFetchEntries*fetchEntryFrame-1))
}

// §6 checks the rendered-body cap before each record: a body one record
// short of 64 MiB still takes the next record whole, and that record may be
// as large as a push body (QUEEN_MAX_BODY_BYTES). Such an answer is
// legitimate and must be read, not refused as too long (a refusal makes the
// consumer retry the same offsets forever).
func TestFetchAnswerOverCapByOneWholeRecordIsRead(t *testing.T) {
	const pushCeiling = 64 << 20 // QUEEN_MAX_BODY_BYTES's default (§0)
	head := `{"entries":[{"queue":"t","partition":"0","records":[`
	rec := func(off int, payloadLen int) string {
		return `{"offset":` + strconv.Itoa(off) + `,"transactionId":"m` + strconv.Itoa(off) +
			`","payload":"` + strings.Repeat("a", payloadLen) + `","ts":"2026-12-05T08:00:00.000000Z"}`
	}
	// The first record leaves the body just short of the cap; the second
	// was pushed alone in a body at the ceiling.
	first := rec(0, 64<<20-len(head)-200)
	second := rec(1, pushCeiling-256)
	body := head + first + "," + second + `],"highWatermark":2,"logStartOffset":0}]}`
	require.Less(t, len(head)+len(first), 64<<20)
	require.Greater(t, len(body), 64<<20+pushCeiling-1024)
	for _, declare := range []bool{true, false} {
		t.Run("declared="+strconv.FormatBool(declare), func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, _ *http.Request, _ string) {
				w.Header().Set("Content-Type", "application/json")
				if declare {
					w.Header().Set("Content-Length", strconv.Itoa(len(body)))
				}
				w.WriteHeader(http.StatusOK)
				_, _ = w.Write([]byte(body))
			})
			res, err := f.client(t, "").Fetch(context.Background(), FetchRequest{Entries: []FetchEntry{{Queue: "t", Partition: "0", MaxBytes: 1 << 20}}})
			require.NoError(t, err)
			require.Len(t, res, 1)
			require.Len(t, res[0].Records, 2)
			require.Equal(t, int64(1), res[0].Records[1].Offset)
			require.Len(t, res[0].Records[1].Payload, pushCeiling-256+2)
		})
	}
}
