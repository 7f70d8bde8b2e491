package transport

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// testTable gates requests in this package's tests: a few APIs, one of
// them a batch, the SASL rows, and ApiVersions.
var testTable = NewTable([]Row{
	{kmsg.Produce.Int16(), 3, 13, &Batch{MaxRequests: maxCoalesce, MaxBytes: coalesceFrameBytes, Answer: answerNothing}, "a batch"},
	{kmsg.Metadata.Int16(), 0, 13, Single(answerEmpty), "a single"},
	{kmsg.Heartbeat.Int16(), 0, 4, Single(answerEmpty), "a single"},
	{kmsg.SASLHandshake.Int16(), 0, 1, SASLHandshake, "SASL"},
	{kmsg.ApiVersions.Int16(), 0, 5, ApiVersions, "the table"},
	{kmsg.CreateTopics.Int16(), 2, 7, Single(answerEmpty), "a single"},
	{kmsg.SASLAuthenticate.Int16(), 0, 1, SASLAuthenticate, "SASL"},
})

func answerEmpty(_ context.Context, _ *Conn, req kmsg.Request) (kmsg.Response, error) {
	return req.ResponseKind(), nil
}

func answerNothing(_ context.Context, _ *Conn, reqs []kmsg.Request) ([]kmsg.Response, int, error) {
	return make([]kmsg.Response, len(reqs)), len(reqs), nil
}
