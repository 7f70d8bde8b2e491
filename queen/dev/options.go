package dev

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/queen-mq/queen-kafka/internal/jsontext"
)

type optKind byte

const (
	optString optKind = iota
	optInt
	optBool
)

type optSpec struct {
	name string
	kind optKind
	str  string
	num  int64
	bool bool
	// signed allows negative integers (only priority is meaningfully signed).
	signed bool
}

// optSpecs are the 21 queue options of §3 with the defaults a new queue gets
// and that replace/null restore, in the order the configure echo lists them.
var optSpecs = [...]optSpec{
	{name: "namespace", kind: optString},
	{name: "task", kind: optString},
	{name: "priority", kind: optInt, signed: true},
	{name: "leaseTime", kind: optInt, num: 300},
	{name: "retryLimit", kind: optInt, num: 3},
	{name: "retryDelay", kind: optInt, num: 1000},
	{name: "maxSize", kind: optInt},
	{name: "ttl", kind: optInt, num: 3600},
	{name: "deadLetterQueue", kind: optBool, bool: true},
	{name: "dlqAfterMaxRetries", kind: optBool, bool: true},
	{name: "delayedProcessing", kind: optInt},
	{name: "windowBuffer", kind: optInt},
	{name: "retentionSeconds", kind: optInt},
	{name: "completedRetentionSeconds", kind: optInt},
	{name: "retentionEnabled", kind: optBool},
	{name: "encryptionEnabled", kind: optBool},
	{name: "maxWaitTimeSeconds", kind: optInt},
	{name: "minPopWaitTime", kind: optInt},
	{name: "dedupWindowSeconds", kind: optInt, num: 3600},
	{name: "retentionSinkHold", kind: optString},
	{name: "retentionSinkHoldMaxSeconds", kind: optInt, num: 604800},
}

const (
	optNamespace        = 0
	optTask             = 1
	optRetentionSeconds = 12
	optRetentionEnabled = 14
	optDedupWindow      = 18
)

type optValue struct {
	str  string
	num  int64
	bool bool
}

// queueOptions holds the 21 options in optSpecs order.
type queueOptions [len(optSpecs)]optValue

func defaultOptions() queueOptions {
	var o queueOptions
	for i, s := range optSpecs {
		o[i] = optValue{str: s.str, num: s.num, bool: s.bool}
	}
	return o
}

// retention reports whether retention is on and its age limit in
// microseconds.
func (o *queueOptions) retention() (enabled bool, micros int64) {
	return o[optRetentionEnabled].bool, secondsToMicros(o[optRetentionSeconds].num)
}

// dedupWindow is dedupWindowSeconds in microseconds (0 = disabled).
func (o *queueOptions) dedupWindow() int64 { return secondsToMicros(o[optDedupWindow].num) }

// secondsToMicros saturates instead of overflowing: an absurd option value
// must mean "very long", not wrap around to "already expired".
func secondsToMicros(s int64) int64 {
	if s > math.MaxInt64/4/1_000_000 {
		return math.MaxInt64 / 4
	}
	return s * 1e6
}

func (o *queueOptions) encode(e *encoder) {
	for i, s := range optSpecs {
		switch s.kind {
		case optString:
			e.str(o[i].str)
		case optInt:
			e.varint(o[i].num)
		case optBool:
			e.bool(o[i].bool)
		}
	}
}

func (o *queueOptions) decode(d *decoder) {
	for i, s := range optSpecs {
		switch s.kind {
		case optString:
			o[i].str = d.str()
		case optInt:
			o[i].num = d.varint()
		case optBool:
			o[i].bool = d.bool()
		}
	}
}

// optionError is a refused option value; the 400 body names it in "invalid".
type optionError struct {
	name, msg string
}

func (e *optionError) Error() string { return "invalid option " + e.name + ": " + e.msg }

// parseOptionChanges reads the option keys present in bag: a value sets,
// an explicit null resets to the default. Keys that are not options are
// ignored (the broker ignores unknown request fields).
func parseOptionChanges(bag map[string]json.RawMessage) (map[int]optValue, error) {
	changes := map[int]optValue{}
	for i, s := range optSpecs {
		raw, ok := bag[s.name]
		if !ok {
			continue
		}
		if isNull(raw) {
			changes[i] = optValue{str: s.str, num: s.num, bool: s.bool}
			continue
		}
		var v optValue
		switch s.kind {
		case optString:
			if err := json.Unmarshal(raw, &v.str); err != nil {
				return nil, &optionError{s.name, "must be a string"}
			}
			if hasControl(v.str) {
				return nil, &optionError{s.name, "control characters are not allowed"}
			}
		case optInt:
			n, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
			if err != nil {
				return nil, &optionError{s.name, "must be an integer"}
			}
			if n < 0 && !s.signed {
				return nil, &optionError{s.name, fmt.Sprintf("must not be negative, got %d", n)}
			}
			v.num = n
		case optBool:
			if err := json.Unmarshal(raw, &v.bool); err != nil {
				return nil, &optionError{s.name, "must be a boolean"}
			}
		}
		changes[i] = v
	}
	return changes, nil
}

// appendEcho renders the 19 options other than namespace and task,
// as the configure echo's "options" object.
func (o *queueOptions) appendEcho(dst []byte) []byte {
	dst = append(dst, '{')
	first := true
	for i, s := range optSpecs {
		if i == optNamespace || i == optTask {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jsontext.AppendString(dst, s.name)
		dst = append(dst, ':')
		switch s.kind {
		case optString:
			dst = jsontext.AppendString(dst, o[i].str)
		case optInt:
			dst = strconv.AppendInt(dst, o[i].num, 10)
		case optBool:
			dst = strconv.AppendBool(dst, o[i].bool)
		}
	}
	return append(dst, '}')
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}
