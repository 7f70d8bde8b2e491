package node

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dispatch is the one place every request passes on its way to an answer,
// whether it is answered alone (its row's handler) or with the Produce
// requests behind it as one push (produceGroup): what watches requests
// (metrics, and later tracing) attaches here once. It returns the answers
// of the first taken requests of group, in order, nil for one owed no
// frame; the rest are answered in a later group. Each taken request is
// reported to the node's observer with its API, version, the first error
// code of its answer and the time its answer took (a coalesced one: the
// group's), an acks=0 produce's whole answer included.
func (c *Conn) dispatch(ctx context.Context, group []queued) (resps []kmsg.Response, taken int, err error) {
	start := time.Now()
	if len(group) == 1 {
		c.clientID.Store(&group[0].hdr.clientID)
		resp, err := c.answer(ctx, group[0])
		if err != nil {
			return nil, 0, err
		}
		resps, taken = []kmsg.Response{resp}, 1
	} else if resps, taken, err = c.answerProduce(ctx, group); err != nil {
		return nil, 0, err
	}
	d := time.Since(start)
	for i, q := range group[:taken] {
		c.n.observe(q, resps[i], d)
		if p, ok := resps[i].(*kmsg.ProduceResponse); ok {
			// acks=0 is owed no frame; its answer was observed all the same.
			resps[i] = produceAnswer(c, q.req.(*kmsg.ProduceRequest), p)
		}
	}
	return resps, taken, nil
}

// answerProduce runs consecutive Produce requests as one push and returns
// the whole answers of the first taken, versioned.
func (c *Conn) answerProduce(ctx context.Context, group []queued) (resps []kmsg.Response, taken int, err error) {
	defer c.recoverHandler(group[0].hdr.key, &err)
	c.clientID.Store(&group[len(group)-1].hdr.clientID)
	reqs := make([]*kmsg.ProduceRequest, len(group))
	for i, q := range group {
		reqs[i] = q.req.(*kmsg.ProduceRequest)
	}
	answers, taken, err := c.n.produceGroup(ctx, c, reqs)
	if err != nil {
		return nil, 0, err
	}
	resps = make([]kmsg.Response, taken)
	for i, a := range answers[:taken] {
		a.SetVersion(group[i].hdr.version)
		resps[i] = a
	}
	return resps, taken, nil
}

// answer runs the handler. A panic is turned into an error so that one bad
// request closes one connection and never the process.
func (c *Conn) answer(ctx context.Context, q queued) (resp kmsg.Response, err error) {
	if q.preset != nil {
		return q.preset, nil
	}
	defer c.recoverHandler(q.hdr.key, &err)
	resp, err = q.row.handler(c.n, ctx, c, q.req)
	if resp != nil {
		resp.SetVersion(q.hdr.version)
	}
	return resp, err
}

// recoverHandler, deferred by a handler's caller, turns a panic into the
// error that closes the connection (the caller's answers are dropped with
// it), so that one bad request never ends the process.
func (c *Conn) recoverHandler(key int16, err *error) {
	if r := recover(); r != nil {
		c.log.Error("handler panic", "api", kmsg.NameForKey(key), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = fmt.Errorf("handler panic: %v", r)
	}
}
