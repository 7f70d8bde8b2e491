package queen

// decodeFetchResponse parses the 200 body of POST /api/v1/fetch in one pass.
// encoding/json validates the whole body, then decodes it, re-scanning and
// copying every payload: most of the client's CPU on the consume path.
// Here each byte is scanned once and payloads alias body (which the caller
// owns and never reuses).
//
// The result is exactly what json.Unmarshal into FetchResponse gives, and an
// input json.Unmarshal refuses is refused (FuzzFetchDecode checks both).
// Rare shapes where encoding/json has extra rules — a key that differs from
// a field name only in case, a string with escapes or invalid UTF-8 — are
// handed to encoding/json rather than re-implemented.
func decodeFetchResponse(body []byte) (FetchResponse, error) {
	return decodeWhole(body, (*scanner).response)
}

// fetchDecoder plugs decodeFetchResponse into Client.call.
type fetchDecoder struct{ resp FetchResponse }

func (d *fetchDecoder) decodeBody(raw []byte) (err error) {
	d.resp, err = decodeFetchResponse(raw)
	return err
}

func (s *scanner) response() (FetchResponse, error) {
	var out FetchResponse
	if isNull, err := s.null(); isNull || err != nil {
		return out, err
	}
	var seen fields
	err := s.object(func(key []byte) error {
		name, err := seen.known(key, "entries")
		if err != nil || name == "" {
			if err == nil {
				_, err = s.value()
			}
			return err
		}
		out.Entries, err = list(s, out.Entries, s.result)
		return err
	})
	return out, err
}

func (s *scanner) result(e *FetchResult) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, "queue", "partition", "records", "highWatermark", "logStartOffset", "error")
		if err != nil {
			return err
		}
		switch name {
		case "queue":
			e.Queue, err = s.str()
		case "partition":
			e.Partition, err = s.str()
		case "error":
			e.Error, err = s.str()
		case "highWatermark":
			e.HighWatermark, err = s.int64()
		case "logStartOffset":
			e.LogStartOffset, err = s.int64()
		case "records":
			e.Records, err = list(s, e.Records, s.record)
		default:
			_, err = s.value()
		}
		return err
	})
}

func (s *scanner) record(r *FetchRecord) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	var seen fields
	return s.object(func(key []byte) error {
		name, err := seen.known(key, "offset", "transactionId", "payload", "ts")
		if err != nil {
			return err
		}
		switch name {
		case "offset":
			r.Offset, err = s.int64()
		case "transactionId":
			r.TransactionID, err = s.str()
		case "ts":
			r.TS, err = s.str()
		case "payload":
			var v []byte
			if v, err = s.value(); err == nil {
				r.Payload = v[:len(v):len(v)] // full slice: appending cannot touch the body
			}
		default:
			_, err = s.value()
		}
		return err
	})
}
