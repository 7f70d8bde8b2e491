package queen

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

// txnDecoder plugs decodeTxnResponse into Client.call.
type txnDecoder struct{ wire txnResponseWire }

func (d *txnDecoder) decodeBody(raw []byte) (err error) {
	d.wire, err = decodeTxnResponse(raw)
	return err
}

func (s *scanner) txnResponse() (txnResponseWire, error) {
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
			out.Results, err = list(s, out.Results, s.txnResult)
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

func (s *scanner) txnResult(r *txnResultWire) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
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
			r.TransactionID, err = s.str()
		case "messageId":
			r.MessageID, err = s.str()
		case "queueName":
			r.QueueName, err = s.str()
		case "duplicate":
			r.Duplicate, err = s.bool()
		default:
			err = s.kvResultMember(name, &r.KVResult, &r.Index)
		}
		return err
	})
}
