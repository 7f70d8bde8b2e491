package queen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

// appendJSONErr renders the POST /api/v1/kv body without reflection. A
// cluster-mode staging write carries up to 64 values of 60,000 bytes of
// base64 each, which encoding/json validated and compacted byte by byte:
// two thirds of a staging write's CPU in the facade. Here a value is
// checked in one pass (jsontext.SkipValue, 8 string bytes at a time) and
// copied as it is; one with whitespace to drop, or one the fast check
// refuses, goes through json.Compact, which is what encoding/json does to
// a json.RawMessage, so the two refuse the same values. An op with a
// number field (incr) is encoded by encoding/json whole.
func (r KVRequest) appendJSONErr(dst []byte) ([]byte, error) {
	n := 32
	for i := range r.Operations {
		op := &r.Operations[i]
		n += 160 + len(op.Key) + len(op.Value) + len(op.Prefix) + len(op.After)
		for _, k := range op.Keys {
			n += len(k) + 4
		}
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, `{"operations":`...)
	dst, err := appendKVOps(dst, r.Operations)
	if err != nil {
		return nil, err
	}
	return append(dst, '}'), nil
}

// appendKVOps renders ops as encoding/json renders a []KVOp (strings
// escaped as jsontext.AppendString does).
func appendKVOps(dst []byte, ops []KVOp) ([]byte, error) {
	if ops == nil {
		return append(dst, "null"...), nil
	}
	dst = append(dst, '[')
	for i := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendKVOp(dst, &ops[i]); err != nil {
			return nil, err
		}
	}
	return append(dst, ']'), nil
}

func appendKVOp(dst []byte, op *KVOp) ([]byte, error) {
	if op.Delta != nil || op.Min != nil || op.Max != nil {
		// encoding/json's float format is its own: let it write the op.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(op); err != nil {
			return nil, err
		}
		return append(dst, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...), nil
	}
	dst = append(dst, `{"op":`...)
	dst = jsontext.AppendString(dst, op.Op)
	dst = append(dst, `,"ns":`...)
	dst = jsontext.AppendString(dst, op.NS)
	if op.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = jsontext.AppendString(dst, op.Key)
	}
	if len(op.Value) > 0 {
		dst = append(dst, `,"value":`...)
		var err error
		if dst, err = appendRawValue(dst, op.Value); err != nil {
			return nil, err
		}
	}
	if op.TTLSeconds != 0 {
		dst = append(dst, `,"ttlSeconds":`...)
		dst = strconv.AppendInt(dst, op.TTLSeconds, 10)
	}
	if op.Forever {
		dst = append(dst, `,"forever":true`...)
	}
	if op.Expect != nil {
		dst = append(dst, `,"expect":`...)
		dst = strconv.AppendInt(dst, *op.Expect, 10)
	}
	if op.Required {
		dst = append(dst, `,"required":true`...)
	}
	if len(op.Keys) > 0 {
		dst = append(dst, `,"keys":[`...)
		for i, k := range op.Keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsontext.AppendString(dst, k)
		}
		dst = append(dst, ']')
	}
	if op.Prefix != "" {
		dst = append(dst, `,"prefix":`...)
		dst = jsontext.AppendString(dst, op.Prefix)
	}
	if op.Limit != 0 {
		dst = append(dst, `,"limit":`...)
		dst = strconv.AppendInt(dst, int64(op.Limit), 10)
	}
	if op.After != "" {
		dst = append(dst, `,"after":`...)
		dst = jsontext.AppendString(dst, op.After)
	}
	if op.KeysOnly {
		dst = append(dst, `,"keysOnly":true`...)
	}
	return append(dst, '}'), nil
}

// appendRawValue appends v, a JSON value, compacted.
func appendRawValue(dst, v []byte) ([]byte, error) {
	if jsontext.Compacted(v) {
		if end, ok := jsontext.SkipValue(v, 0, maxValueDepth); ok && end == len(v) {
			return append(dst, v...), nil
		}
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, v); err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
	}
	return buf.Bytes(), nil
}

// maxValueDepth is how deep a value the fast check follows; a deeper one
// (encoding/json allows 10,000) is json.Compact's to check.
const maxValueDepth = 64
