package queen

import (
	"fmt"
	"strings"
	"testing"
)

var txnSamples = append([]string{
	`{"transactionId":"t1","success":true,"results":[{"index":0,"type":"push","success":true,"transactionId":"k0","messageId":"m0","queueName":"out"},{"index":1,"type":"push","success":true,"transactionId":"k1","messageId":"m1","queueName":"out","duplicate":true},{"index":2,"type":"kv","opIndex":0,"op":"put","applied":true,"key":"qk:txn:a","value":{"pid":7,"state":"committed"},"version":12}]}`,
	`{"transactionId":"t2","success":false,"reason":"kv_precondition","error":"lost","results":null,"ok":false,"failedIndex":3,"kvReason":"version","version":7,"value":{"pid":8}}`,
	`{"transactionId":"t3","success":false,"reason":"duplicate","failedIndex":null,"kvReason":null,"version":null,"value":null}`,
	` { "success" : true , "results" : [ { "index" : 0 , "type" : "kv" , "opIndex" : 0 , "op" : "getMany" , "rows" : [ { "key" : "a" , "value" : [ 1 , 2 ] , "version" : 1 } ] , "missing" : [ "b" ] , "truncated" : false , "extra" : null } ] , "dashboard" : { } } `,
	`{}`, `null`, `{"results":[]}`, `{"results":[null,{"success":null,"duplicate":null,"applied":null}]}`,
	`{"transactionId":"esc\"aped\u0041","results":[{"queueName":"\ud83d\ude00"}]}`, // escapes
	`{"Success":true}`,                                                    // case-insensitive key
	`{"results":[{"index":0,"index":1}]}`,                                 // repeated key
	`{"results":[{"queueName":"inv` + "\xff" + `alid"}]}`,                 // invalid UTF-8
	`{"succ\u0065ss":true}`,                                               // escaped key
	`{"results":[{"index":0,"type":"push","success":true}],"Results":[]}`, // the fallback after results were decoded
}, txnAnswerSeeds...)

var txnInvalid = []string{
	``, `[]`, `"x"`, `{"success":"true"}`, `{"success":1}`, `{"results":{}}`, `{"results":[5]}`,
	`{"results":[{"index":1.0}]}`, `{"results":[{"success":"y"}]}`, `{"results":[{"duplicate":0}]}`,
	`{"results":[{"messageId":5}]}`, `{"results":[{"opIndex":"0"}]}`, `{"failedIndex":1e2}`, `{"version":"7"}`,
	`{"value":tru}`, `{"results":[{"rows":[{"value":}]}]}`, `{"success":true} x`, `{"success":true`, `{,}`, `{"a":1,}`,
}

func normTxn(w txnResponseWire) txnResponseWire {
	if len(w.Results) == 0 {
		w.Results = nil
	}
	for i := range w.Results {
		r := &w.Results[i]
		if len(r.Rows) == 0 {
			r.Rows = nil
		}
		if len(r.Missing) == 0 {
			r.Missing = nil
		}
	}
	return w
}

func TestTxnDecodeMatchesEncodingJSON(t *testing.T) {
	checkDecoderSamples(t, txnSamples, txnInvalid, decodeTxnResponse, normTxn)
}

// Every proper prefix of a valid answer is refused.
func TestTxnDecodeRefusesEveryTruncation(t *testing.T) {
	for _, in := range txnSamples {
		if strings.TrimSpace(in) == "null" {
			continue
		}
		trimmed := strings.TrimRight(in, " ")
		for n := 0; n < len(trimmed); n++ {
			if _, err := decodeTxnResponse([]byte(trimmed[:n])); err == nil {
				t.Fatalf("accepted %q, a truncation of %q", trimmed[:n], in)
			}
		}
	}
}

func FuzzTxnDecode(f *testing.F) {
	fuzzDecoder(f, txnSamples, txnInvalid, decodeTxnResponse, normTxn)
}

// visitedAnswer is decodeTxnAnswer's outcome as a wire value: the results
// each saw (since the last restart), copied.
func visitedAnswer(body []byte) (txnResponseWire, error) {
	var results []txnResultWire
	resp, err := decodeTxnAnswer(body, func() { results = nil }, func(r *txnResultWire) { results = append(results, *r) })
	return txnResponseWire{TxnResponse: resp, Results: results}, err
}

// leanTxn is normTxn without what decodeTxnAnswer does not keep.
func leanTxn(w txnResponseWire) txnResponseWire {
	w = normTxn(w)
	w.Results = append([]txnResultWire(nil), w.Results...)
	for i := range w.Results {
		r := &w.Results[i]
		r.TransactionID, r.MessageID, r.QueueName = "", "", ""
	}
	return w
}

// decodeTxnAnswer hands each exactly the results json.Unmarshal gives, in
// order (those three strings aside), refuses what it refuses, and answers
// the same response.
func TestTxnAnswerVisitsMatchEncodingJSON(t *testing.T) {
	checkDecoderSamples(t, txnSamples, txnInvalid, visitedAnswer, leanTxn)
	for _, in := range txnSamples {
		trimmed := strings.TrimRight(in, " ")
		for n := 0; n < len(trimmed); n++ {
			if strings.TrimSpace(in) != "null" {
				if _, err := visitedAnswer([]byte(trimmed[:n])); err == nil {
					t.Fatalf("accepted %q, a truncation of %q", trimmed[:n], in)
				}
			}
		}
	}
}

func FuzzTxnAnswerVisits(f *testing.F) {
	fuzzDecoder(f, txnSamples, txnInvalid, visitedAnswer, leanTxn)
}

// txnAnswerBody is queen-dev's committed answer to a transaction of n
// records (the facade's dedup keys echoed) and the fence.
func txnAnswerBody(n int) []byte {
	b := []byte(`{"transactionId":"0193a0c4-7d2e-7b1a-9c3e-5f1d2a3b4c5d","success":true,"results":[`)
	for i := range n {
		b = fmt.Appendf(b, `{"index":%d,"type":"push","success":true,"transactionId":"kafka:123456:0:%d","messageId":"0193a0c4-7d2e-7b1a-9c3e-%012d","queueName":"bk-int-single-436671800-2"},`, i, i/8, i)
	}
	return fmt.Appendf(b, `{"index":%d,"type":"kv","opIndex":0,"op":"put","applied":true,"key":"qk:txn:t","version":42}]}`, n)
}

// BenchmarkTxnAnswer: the answer to a 100 ms commit's transaction (25,000
// records) decoded as a list (decodeTxnResponse) and visited
// (decodeTxnAnswer, what Transaction does).
func BenchmarkTxnAnswer(b *testing.B) {
	body := txnAnswerBody(25000)
	b.Run("listed", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := decodeTxnResponse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("visited", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		n := 0
		for b.Loop() {
			if _, err := decodeTxnAnswer(body, func() {}, func(*txnResultWire) { n++ }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
