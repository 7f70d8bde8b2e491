package queen

import (
	"encoding/json"
	"errors"
)

// decodeTxnResponse parses the 200 body of POST /api/v1/transaction in one
// pass, as decodeKVResponse does the KV answer: a commit of 4,000 records
// is answered with 4,000 push echoes (about 600 KB), which encoding/json
// validated and then decoded, on the path of every EndTxn(commit). The
// result is exactly what json.Unmarshal into txnResponseWire gives, and
// what it refuses is refused (FuzzTxnDecode); the shapes it has rules of
// its own for are handed to it.
func decodeTxnResponse(body []byte) (txnResponseWire, error) {
	return decodeWhole(body, (*scanner).txnResponse)
}

// decodeTxnAnswer is decodeTxnResponse for Client.Transaction: each
// result is handed to each, in order, as it is decoded, instead of kept.
// A commit of 25,000 records is answered with 25,000 push echoes (some
// 5 MB), which decodeTxnResponse holds as a list of 270-byte results, grown
// by doubling, and three strings each: 30-45 ms of the facade's CPU per
// EndTxn(commit) at a 100 ms commit interval, on the commit's path, where
// Transaction needs of an echo only its index and success. A push echo's
// transactionId, messageId and queueName are checked as JSON strings but
// not kept (empty in r). r is reused once each returns. When the body
// takes encoding/json's path (a shape the scanner hands over), restart is
// called and each then sees encoding/json's results from the first, so what
// each has seen in the end is what json.Unmarshal gives, those three fields
// aside (FuzzTxnAnswerVisits). The response returned carries no results.
func decodeTxnAnswer(body []byte, restart func(), each func(r *txnResultWire)) (TxnResponse, error) {
	s := scanner{b: body}
	out, err := s.txnResponseTo(each)
	if err == nil {
		s.ws()
		if s.i != len(s.b) {
			err = s.errf("data after the top-level value")
		}
	}
	if errors.Is(err, errFallback) {
		restart()
		var wire txnResponseWire
		if err = json.Unmarshal(body, &wire); err == nil {
			for i := range wire.Results {
				each(&wire.Results[i])
			}
		}
		out = wire
	}
	out.Results = nil
	return out.TxnResponse, err
}

// txnAnswerDecoder plugs decodeTxnAnswer into Client.call.
type txnAnswerDecoder struct {
	resp    TxnResponse
	restart func()
	each    func(*txnResultWire)
}

func (d *txnAnswerDecoder) decodeBody(raw []byte) (err error) {
	d.resp, err = decodeTxnAnswer(raw, d.restart, d.each)
	return err
}

func (s *scanner) txnResponse() (txnResponseWire, error) { return s.txnResponseTo(nil) }

// txnResponseTo decodes the answer; with each, the results are handed to
// it one by one (see decodeTxnAnswer) rather than listed.
func (s *scanner) txnResponseTo(each func(*txnResultWire)) (txnResponseWire, error) {
	var out txnResponseWire
	if isNull, err := s.null(); isNull || err != nil {
		return out, err
	}
	var seen fields
	err := s.object(func(key []byte) error {
		name, err := seen.known(key, "transactionId", "success", "reason", "error", "results", "ok", "failedIndex", "kvReason", "version", "value")
		if err != nil {
			return err
		}
		switch name {
		case "transactionId":
			out.TransactionID, err = s.str()
		case "success":
			out.Success, err = s.bool()
		case "reason":
			out.Reason, err = s.str()
		case "error":
			out.Error, err = s.str()
		case "results":
			if each == nil {
				out.Results, err = list(s, out.Results, s.txnResult)
				break
			}
			if isNull, nerr := s.null(); isNull || nerr != nil {
				err = nerr
				break
			}
			var r txnResultWire
			err = s.array(func() error {
				r = txnResultWire{}
				if err := s.leanTxnResult(&r); err != nil {
					return err
				}
				each(&r)
				return nil
			})
		case "ok":
			out.OK, err = s.boolPtr()
		case "failedIndex":
			out.FailedIndex, err = s.intPtr()
		case "kvReason":
			out.KVReason, err = s.strPtr()
		case "version":
			out.Version, err = s.int64Ptr()
		case "value":
			out.Value, err = s.raw()
		default:
			_, err = s.value()
		}
		return err
	})
	return out, err
}

// txnResultNames are a KV result's members and a push echo's.
var txnResultNames = append(append([]string{}, kvResultNames...), "success", "transactionId", "messageId", "queueName", "duplicate")

func (s *scanner) txnResult(r *txnResultWire) error { return s.txnResultOf(r, false) }

// leanTxnResult is txnResult keeping none of a push echo's three strings.
func (s *scanner) leanTxnResult(r *txnResultWire) error { return s.txnResultOf(r, true) }

func (s *scanner) txnResultOf(r *txnResultWire, lean bool) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	str := s.str
	if lean {
		str = s.checkedStr
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, txnResultNames...)
		if err != nil {
			return err
		}
		switch name {
		case "success":
			r.Success, err = s.boolPtr()
		case "transactionId":
			r.TransactionID, err = str()
		case "messageId":
			r.MessageID, err = str()
		case "queueName":
			r.QueueName, err = str()
		case "duplicate":
			r.Duplicate, err = s.bool()
		default:
			err = s.kvResultMember(name, &r.KVResult, &r.Index)
		}
		return err
	})
}
