package queen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// The KV and transaction answers are decoded by encoding/json into their
// wire shapes and then checked by KV and Transaction (indexes, op echoes,
// rollbacks); these targets hand those routes arbitrary 200 bodies through
// an in-memory transport: never a panic, and what is accepted is one
// result per op sent, each echoing its op.

// answerTransport answers every request with 200 and body.
type answerTransport struct{ body []byte }

func (a *answerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(a.body)), Request: r}, nil
}

func answeringClient(body []byte) *Client {
	return &Client{base: "http://queen.fuzz", timeout: RequestTimeout, hc: &http.Client{Transport: &answerTransport{body: body}}}
}

var expect3 = int64(3)

// fuzzKVOps is what the answers answer: a read, a required
// compare-and-set, a conditional create and a prefix scan.
var fuzzKVOps = []KVOp{
	{Op: OpGet, NS: "kafka", Key: "g:a"},
	{Op: OpPut, NS: "kafka", Key: "g:b", Value: []byte(`1`), Expect: &expect3, Required: true},
	{Op: OpPutIfAbsent, NS: "kafka", Key: "g:c", Value: []byte(`"x"`)},
	{Op: OpGetPrefix, NS: "kafka", Prefix: "g:"},
}

func FuzzKVAnswer(f *testing.F) {
	for _, s := range kvAnswerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := answeringClient(body).KV(context.Background(), fuzzKVOps)
		checkKVAnswer(t, body, got, err, fuzzKVOps)
	})
}

// fuzzTxn pushes three items in two operations and rides two KV ops.
var fuzzTxn = TxnRequest{
	Operations: []TxnOperation{
		{Type: "push", Items: []PushItem{{Queue: "q", Payload: []byte(`1`)}, {Queue: "q", Payload: []byte(`2`)}}},
		{Type: "push", Items: []PushItem{{Queue: "r", Payload: []byte(`3`)}}},
	},
	KV: fuzzKVOps[1:3],
}

func FuzzTxnAnswer(f *testing.F) {
	for _, s := range txnAnswerSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := answeringClient(body).Transaction(context.Background(), fuzzTxn)
		var te *TxnError
		if errors.As(err, &te) && (te.KVIndex < 0) {
			t.Fatalf("rollback names kv index %d", te.KVIndex)
		}
		checkKVAnswer(t, body, got, err, fuzzTxn.KV)
		checkTxnAnswerAsListed(t, body, got, err)
	})
}

// listedTxnAnswer is what Transaction made of a 200 answer when it decoded
// the whole list of results first (decodeTxnResponse) and then checked
// them: the reference for its checks as each result is decoded.
// decoded is false when the body did not decode.
func listedTxnAnswer(body []byte, items int, ops []KVOp) (kv []KVResult, err error, decoded bool) {
	wire, derr := decodeTxnResponse(body)
	if derr != nil {
		return nil, derr, false
	}
	out := wire.TxnResponse
	if !out.Success {
		te := &TxnError{Reason: out.Reason, Message: Sanitize(out.Error)}
		if out.FailedIndex != nil {
			te.KVIndex = max(*out.FailedIndex-items, 0)
		}
		te.KVReason, te.Version, te.Value = lostPrecondition(out.KVReason, out.Version, out.Value)
		return nil, te, true
	}
	pushSeen := make([]bool, items)
	for i, w := range wire.Results {
		if w.Index == nil {
			return nil, protocolError(routeTxn, "result %d carries no index", i), true
		}
		r := w.TxnResult
		r.Index = *w.Index
		switch r.Type {
		case "push":
			if r.Index < 0 || r.Index >= items || pushSeen[r.Index] {
				return nil, protocolError(routeTxn, "push echo index %d repeated or out of range", r.Index), true
			}
			if r.Success == nil || !*r.Success {
				return nil, protocolError(routeTxn, "push echo %d not successful", r.Index), true
			}
			pushSeen[r.Index] = true
		case "kv":
			if r.OpIndex == nil || r.Index != items+*r.OpIndex {
				return nil, protocolError(routeTxn, "kv result at flat index %d does not match its opIndex", r.Index), true
			}
			kv = append(kv, r.KVResult)
		default:
			return nil, protocolError(routeTxn, "unexpected result type %q at index %d", r.Type, r.Index), true
		}
	}
	for i, ok := range pushSeen {
		if !ok {
			return nil, protocolError(routeTxn, "no push echo for item %d", i), true
		}
	}
	kv, err = alignKV(routeTxn, kv, ops, func(r KVResult) int { return *r.OpIndex })
	return kv, err, true
}

// checkTxnAnswerAsListed holds Transaction's answer to body to
// listedTxnAnswer's: the same results, or the same error (a body that does
// not decode: a protocol error saying so).
func checkTxnAnswerAsListed(t *testing.T, body []byte, got []KVResult, err error) {
	t.Helper()
	want, wantErr, decoded := listedTxnAnswer(body, 3, fuzzTxn.KV)
	switch {
	case !decoded:
		if KindOf(err) != KindProtocol || !strings.Contains(err.Error(), "decode: ") {
			t.Fatalf("answer %q: %v, want a decode error (%v)", body, err, wantErr)
		}
	case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
		t.Fatalf("answer %q: error %v, listed %v", body, err, wantErr)
	case !reflect.DeepEqual(got, want):
		t.Fatalf("answer %q: results %+v, listed %+v", body, got, want)
	}
}

// Transaction answers every sample as it did when it listed the results.
func TestTxnAnswerChecksAsListed(t *testing.T) {
	for _, in := range append(append(append([]string{}, txnAnswerSeeds...), txnSamples...), txnInvalid...) {
		got, err := answeringClient([]byte(in)).Transaction(context.Background(), fuzzTxn)
		checkTxnAnswerAsListed(t, []byte(in), got, err)
	}
}

func checkKVAnswer(t *testing.T, body []byte, got []KVResult, err error, ops []KVOp) {
	t.Helper()
	if err != nil {
		var pe *PreconditionError
		var te *TxnError
		if KindOf(err) != KindProtocol && !errors.As(err, &pe) && !errors.As(err, &te) {
			t.Fatalf("answer %q: error of kind %v: %v", body, KindOf(err), err)
		}
		return
	}
	if len(got) != len(ops) {
		t.Fatalf("answer %q: %d results for %d ops", body, len(got), len(ops))
	}
	for i, r := range got {
		if !sameOp(ops[i].Op, r.Op) {
			t.Fatalf("answer %q: result %d echoes %q for %q", body, i, r.Op, ops[i].Op)
		}
	}
}

var kvAnswerSeeds = []string{
	`{"results":[{"index":0,"op":"get","key":"g:a","found":true,"value":{"o":1},"version":2},{"index":1,"op":"put","applied":true,"version":4},{"index":2,"op":"put","applied":true,"version":1},{"index":3,"op":"getPrefix","rows":[{"key":"g:a","value":1,"version":2}],"truncated":false}]}`,
	`{"results":[{"index":3,"op":"getPrefix","rows":[]},{"index":2,"op":"putIfAbsent","applied":false,"reason":"exists"},{"index":1,"op":"put","applied":true},{"index":0,"op":"get","found":false}]}`,
	`{"ok":false,"failedIndex":1,"kvReason":"version","version":5,"value":{"o":9}}`,
	`{"ok":false,"failedIndex":1}`,
	`{"results":[{"index":0,"op":"get"},{"index":0,"op":"put"}]}`,
}

var txnAnswerSeeds = []string{
	`{"transactionId":"t1","success":true,"results":[{"index":0,"type":"push","success":true},{"index":1,"type":"push","success":true},{"index":2,"type":"push","success":true},{"index":3,"type":"kv","opIndex":0,"op":"put","applied":true,"version":4},{"index":4,"type":"kv","opIndex":1,"op":"putIfAbsent","applied":true}]}`,
	`{"transactionId":"t2","success":false,"reason":"kv_precondition","error":"lost","failedIndex":3,"kvReason":"version","version":7}`,
	`{"transactionId":"t3","success":false,"reason":"kv_precondition","failedIndex":0}`,
	`{"transactionId":"t4","success":true,"results":[{"index":0,"type":"push","success":true},{"index":0,"type":"push","success":true}]}`,
	`{"transactionId":"t5","success":true,"results":[{"index":4,"type":"kv","opIndex":1,"op":"put"}]}`,
}
