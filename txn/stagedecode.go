package txn

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// The stage's r: rows are read back at every cluster-mode commit, before
// its Queen transaction: encoding/json validated each row, decoded its
// base64 through a second pass, then validated and copied every record of
// the joined array again (about half the time of reading a stage). The
// fast decoders below take the exact text this package writes (json.Marshal
// of stageRecords, recordRows' array) in one pass each; anything else goes
// to encoding/json, the authority for every error, and they agree with it
// on whatever they take (FuzzStageDecode).

// decodeStageRecords decodes an r: row's value, of either form.
func decodeStageRecords(b []byte) (stageRecords, error) {
	if v, ok := scanStageRecords(b); ok {
		return v, nil
	}
	return unmarshalStageRecords(b)
}

// unmarshalStageRecords is decodeStageRecords by encoding/json: "d" a
// string is the base64 form (null too, as a []byte field takes it), an
// array the array form.
func unmarshalStageRecords(b []byte) (stageRecords, error) {
	var w struct {
		Topic     string          `json:"q"`
		Partition int32           `json:"p"`
		Bytes     int64           `json:"b"`
		Chunks    int             `json:"n"`
		D         json.RawMessage `json:"d"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return stageRecords{}, err
	}
	v := stageRecords{Topic: w.Topic, Partition: w.Partition, Bytes: w.Bytes, Chunks: w.Chunks}
	if len(w.D) > 0 && w.D[0] == '[' {
		v.Pairs = w.D
		return v, nil
	}
	if err := json.Unmarshal(w.D, &v.Data); len(w.D) > 0 && err != nil {
		return stageRecords{}, err
	}
	return v, nil
}

// scanStageRecords takes {"q":…,"p":…[,"b":…],"n":…,"d":…}, "d" a base64
// string or an array, the shapes this package writes.
func scanStageRecords(b []byte) (v stageRecords, ok bool) {
	i, ok := prefix(b, 0, `{"q":`)
	if !ok || i >= len(b) || b[i] != '"' {
		return v, false
	}
	end, escaped, bad := jsontext.ScanString(b, i)
	if escaped || bad != "" || !utf8.Valid(b[i+1:end-1]) {
		return v, false
	}
	v.Topic = string(b[i+1 : end-1])
	var p int64
	if i, p, ok = intField(b, end, `,"p":`, 32); !ok {
		return v, false
	}
	v.Partition = int32(p)
	if j, n, ok := intField(b, i, `,"b":`, 64); ok {
		i, v.Bytes = j, n
	}
	var n int64
	if i, n, ok = intField(b, i, `,"n":`, 64); !ok || int64(int(n)) != n {
		return v, false
	}
	v.Chunks = int(n)
	if j, ok := prefix(b, i, `,"d":[`); ok {
		end, ok := jsontext.SkipValue(b, j-1, 1000)
		if !ok || string(b[end:]) != "}" {
			return v, false
		}
		v.Pairs = b[j-1 : end : end]
		return v, true
	}
	if i, ok = prefix(b, i, `,"d":"`); !ok {
		return v, false
	}
	q := bytes.IndexByte(b[i:], '"')
	if q < 0 || string(b[i+q:]) != `"}` {
		return v, false
	}
	src := b[i : i+q]
	if bytes.IndexByte(src, '\\') >= 0 {
		return v, false
	}
	// encoding/json decodes a []byte field with this very call.
	data := make([]byte, base64.StdEncoding.DecodedLen(len(src)))
	m, err := base64.StdEncoding.Decode(data, src)
	if err != nil {
		return v, false
	}
	v.Data = data[:m]
	return v, true
}

func prefix(b []byte, i int, p string) (int, bool) {
	if len(b)-i >= len(p) && string(b[i:i+len(p)]) == p {
		return i + len(p), true
	}
	return i, false
}

// intField reads name and a plain integer of bits bits after it.
func intField(b []byte, i int, name string, bits int) (int, int64, bool) {
	i, ok := prefix(b, i, name)
	if !ok {
		return i, 0, false
	}
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	start := j
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == start || (b[start] == '0' && j > start+1) {
		return i, 0, false
	}
	n, err := strconv.ParseInt(string(b[i:j]), 10, bits)
	if err != nil {
		return i, 0, false
	}
	return j, n, true
}

// decodePairs splits a batch's array [["<dedup key>",<envelope>],…] into
// its keys and envelopes; the envelopes alias array.
func decodePairs(array []byte) (keys []string, payloads []json.RawMessage, err error) {
	if keys, payloads, ok := scanPairs(array); ok {
		return keys, payloads, nil
	}
	var pairs [][2]json.RawMessage
	if err := json.Unmarshal(array, &pairs); err != nil {
		return nil, nil, err
	}
	keys = make([]string, len(pairs))
	payloads = make([]json.RawMessage, len(pairs))
	for i, p := range pairs {
		if err := json.Unmarshal(p[0], &keys[i]); err != nil {
			return nil, nil, err
		}
		payloads[i] = p[1]
	}
	return keys, payloads, nil
}

// scanPairs is decodePairs' one pass over the text recordRows writes:
// plain keys (no escape, valid UTF-8) and any JSON value beside each.
func scanPairs(b []byte) (keys []string, payloads []json.RawMessage, ok bool) {
	i := jsontext.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, nil, false
	}
	i = jsontext.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return []string{}, []json.RawMessage{}, jsontext.SkipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '[' {
			return nil, nil, false
		}
		i = jsontext.SkipSpace(b, i+1)
		if i >= len(b) || b[i] != '"' {
			return nil, nil, false
		}
		end, escaped, bad := jsontext.ScanString(b, i)
		if escaped || bad != "" || !utf8.Valid(b[i+1:end-1]) {
			return nil, nil, false
		}
		keys = append(keys, string(b[i+1:end-1]))
		i = jsontext.SkipSpace(b, end)
		if i >= len(b) || b[i] != ',' {
			return nil, nil, false
		}
		i = jsontext.SkipSpace(b, i+1)
		start := i
		if i, ok = jsontext.SkipValue(b, i, 1000); !ok {
			return nil, nil, false
		}
		payloads = append(payloads, b[start:i:i])
		i = jsontext.SkipSpace(b, i)
		if i >= len(b) || b[i] != ']' {
			return nil, nil, false
		}
		i = jsontext.SkipSpace(b, i+1)
		switch {
		case i >= len(b):
			return nil, nil, false
		case b[i] == ']':
			return keys, payloads, jsontext.SkipSpace(b, i+1) == len(b)
		case b[i] != ',':
			return nil, nil, false
		}
		i = jsontext.SkipSpace(b, i+1)
	}
}
