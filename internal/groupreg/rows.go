package groupreg

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
)

// Put is the put of a group row holding v as JSON, kept forever.
func Put(key string, v any) queen.KVOp {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("groupreg: encoding %T: %v", v, err)) // plain structs always encode
	}
	return queen.KVOp{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: b, Forever: true}
}

// Code is the Kafka code a failed store call answers: a lost
// compare-and-set is NOT_COORDINATOR, the rest as faults.GroupCode maps it
// for the classic coordinator too.
func Code(err error) int16 {
	if errors.Is(err, ErrLost) {
		return kerr.NotCoordinator.Code
	}
	return faults.GroupCode(err)
}

// Matches is a ListGroups filter (states v4, types v5) as Kafka matches
// it: trimmed and case-insensitively, an empty filter wanting everything.
func Matches(filter []string, v string) bool {
	if len(filter) == 0 {
		return true
	}
	for _, f := range filter {
		if strings.EqualFold(strings.TrimSpace(f), v) {
			return true
		}
	}
	return false
}

// Refusal is a group request refused with Kafka's code and message.
type Refusal struct {
	Code int16
	Msg  string
}

// Message is the refusal's message as an answer carries it (null when
// there is none).
func (r *Refusal) Message() *string {
	if r.Msg == "" {
		return nil
	}
	msg := r.Msg
	return &msg
}

// Refuse is a Refusal with a formatted message.
func Refuse(code int16, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Msg: fmt.Sprintf(format, args...)}
}
