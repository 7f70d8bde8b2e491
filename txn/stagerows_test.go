package txn

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// stageBatch is a batch of n records of size value bytes on partition p.
func stageBatch(p int32, seq int32, n, size int) *Batch {
	b := &Batch{TransactionalID: "t", ProducerID: 7, Topic: "out", Partition: p, FirstSeq: seq}
	b.Keys = producer.DedupKeys(7, 0, seq, n)
	for i := range n {
		rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: bytes.Repeat([]byte{byte(i)}, size), Timestamp: 1787824800123}
		b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
		b.Bytes += int64(size + len(rec.Key))
	}
	return b
}

// jsonbPrint is what a PostgreSQL jsonb makes of compact JSON text: a
// space after every ',' and ':' between tokens (its key order aside).
func jsonbPrint(b []byte) []byte {
	out := make([]byte, 0, len(b)*5/4)
	in, esc := false, false
	for _, c := range b {
		out = append(out, c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ',' || c == ':'):
			out = append(out, ' ')
		}
	}
	return out
}

// The r: rows carry the envelopes as JSON text, so the commit pastes them
// into its Queen transaction as read: every staged envelope is in a row's
// value verbatim, and the rows weigh what the records' pairs do (the
// base64 form they replace weighed 4/3 of it, in a third more rows).
func TestStageRowsCarryTheEnvelopesAsJSON(t *testing.T) {
	b := stageBatch(3, 0, 100, 1024)
	ops, err := recordRows("qk:txnstage:t:7:0:1:", b, 60)
	require.NoError(t, err)
	pairs, values := 0, 0
	for i, p := range b.Payloads {
		pairs += len(p) + len(b.Keys[i]) + 6
		found := false
		for _, op := range ops {
			found = found || bytes.Contains(op.Value, p)
		}
		require.True(t, found, "record %d is not in any row as its JSON text", i)
	}
	for _, op := range ops {
		values += len(op.Value)
	}
	require.LessOrEqual(t, values, pairs+pairs/50, "the rows weigh more than the records' text")
	require.Equal(t, (pairs+60_000)/64_000, len(ops), "rows for %d bytes of records", pairs)
}

// Whatever a batch holds, each row of it, printed as a jsonb prints it,
// stays within §7.3's value ceiling, and reads back as the batch; a batch
// with a record past a row's room is written in the base64 form.
func TestStageRowsWithinTheValueCeiling(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		n := 1 + rng.IntN(60)
		b := &Batch{Topic: strings.Repeat("t", 1+rng.IntN(249)), Partition: rng.Int32N(1 << 20), FirstSeq: rng.Int32(), Bytes: rng.Int64N(1 << 40)}
		b.Keys = make([]string, n)
		big := false
		for i := range n {
			var size int
			switch rng.IntN(10) {
			case 0:
				size = 40_000 + rng.IntN(10_000) // around a row's room, base64 in its envelope
			case 1:
				size = rng.IntN(20)
			default:
				size = rng.IntN(5000)
			}
			rec := envelope.Record{Key: []byte(strconv.Itoa(i)), Value: make([]byte, size), Timestamp: rng.Int64N(1 << 45)}
			for j := range rng.IntN(4) {
				rec.Headers = append(rec.Headers, envelope.Header{Key: strings.Repeat(",:", j*rng.IntN(200)), Value: []byte{1}})
			}
			b.Payloads = append(b.Payloads, envelope.Append(nil, &rec))
			b.Keys[i] = "kafka:" + strconv.Itoa(round) + ":0:" + strconv.Itoa(i)
			big = big || len(b.Payloads[i]) > 60_000
		}
		ops, err := recordRows("qk:txnstage:t:7:0:1:", b, 60)
		require.NoError(t, err)
		var a batchAssembly
		var items []queen.PushItem
		for c, op := range ops {
			require.LessOrEqual(t, len(jsonbPrint(op.Value)), stageValueMax, "round %d row %d", round, c)
			require.LessOrEqual(t, serializedBound(op.Value), stageValueMax, "round %d row %d", round, c)
			require.True(t, json.Valid(op.Value))
			v, err := decodeStageRecords(jsonbPrint(op.Value)) // the slow path, as a jsonb answers
			require.NoError(t, err)
			if !big {
				require.NotNil(t, v.Pairs, "round %d: a batch with no record past a row's room is in the array form", round)
			}
			items, err = a.add(items, "b", c, v)
			require.NoError(t, err)
		}
		require.Len(t, items, n, "round %d", round)
		for i, it := range items {
			require.Equal(t, b.Keys[i], it.TransactionID)
			require.JSONEq(t, string(b.Payloads[i]), string(it.Payload))
		}
	}
}

// A stage read at the commit takes rows of both forms, batch by batch:
// what a node of the build before staged (base64) commits beside what
// this one staged. A batch whose rows mix the forms (a retry through a
// node of the other build that wrote fewer rows) is refused whole.
func TestStageReadsEitherForm(t *testing.T) {
	q := devbroker.Start(t, dev.Options{Logger: slog.New(slog.DiscardHandler)}, nil).Client
	ref := Ref{PID: 7, Epoch: 0, Txn: 1}
	key := Key{ID: "t"}
	prefix := queen.TxnStagePrefix(key.ID, ref.PID, ref.Epoch, ref.Txn)
	var want []*Batch
	for p := range int32(4) {
		b := stageBatch(p, p*100, 100, 1024)
		write := recordRows
		if p%2 == 1 {
			write = base64RecordRows
		}
		ops, err := write(prefix, b, 600)
		require.NoError(t, err)
		_, err = q.KV(bg, ops)
		require.NoError(t, err)
		want = append(want, b)
	}
	stages := QueenStages{Clock: func() int64 { return time.Now().UnixMilli() }, Log: slog.New(slog.DiscardHandler)}
	items, _, err := stages.Open(key, ref, q).Contents(bg)
	require.NoError(t, err)
	require.Len(t, items, 400)
	for i, it := range items {
		b := want[i/100]
		require.Equal(t, strconv.Itoa(int(b.Partition)), it.Partition)
		require.Equal(t, b.Keys[i%100], it.TransactionID)
		require.Equal(t, string(b.Payloads[i%100]), string(it.Payload))
	}

	// Partition 0's batch written by this build, then in part (its last
	// rows, which the array form's fewer rows do not overwrite) by an
	// older node: the read meets both forms in one batch.
	mixed := stageBatch(0, 0, 100, 1024)
	old, err := base64RecordRows(prefix, mixed, 600)
	require.NoError(t, err)
	cur, err := recordRows(prefix, mixed, 600)
	require.NoError(t, err)
	require.Greater(t, len(old), len(cur), "the base64 form takes more rows")
	_, err = q.KV(bg, cur[:len(cur)-1]) // array-form rows over the base64 ones but the last
	require.NoError(t, err)
	_, err = q.KV(bg, old[len(cur)-1:])
	require.NoError(t, err)
	_, _, err = stages.Open(key, ref, q).Contents(bg)
	var poisoned *poisonedError
	require.ErrorAs(t, err, &poisoned)
}

// A node of the build before reads a row with encoding/json into its
// []byte "d": the array form is an error there, never records, so an
// older owner commits nothing of a stage an updated node wrote (it
// answers COORDINATOR_NOT_AVAILABLE and the client retries).
func TestOlderBuildRefusesTheArrayForm(t *testing.T) {
	ops, err := recordRows("qk:txnstage:t:7:0:1:", stageBatch(1, 0, 100, 1024), 60)
	require.NoError(t, err)
	for _, op := range ops {
		var old base64Records
		require.Error(t, json.Unmarshal(op.Value, &old))
	}
}
