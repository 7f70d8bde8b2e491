package transport

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// dispatch is the one place every request passes on its way to an answer,
// whether its row's handler answers it alone (Single) or with the requests
// of its API behind it (Batch): what watches requests (metrics, and later
// tracing) attaches here once. It returns the answers of the first taken
// requests of group, in order, nil for one owed no frame; the rest are
// answered in a later group. Each taken request is reported to the
// server's observer with its API, version, the first error code of its
// answer and the time its answer took (a grouped one: the group's), the
// whole answer of one owed no frame included.
func (c *Conn) dispatch(ctx context.Context, group []queued) (resps []kmsg.Response, taken int, err error) {
	start := time.Now()
	b := batchOf(group[0])
	if b == nil {
		c.clientID.Store(&group[0].hdr.clientID)
		resp, err := c.answer(ctx, group[0])
		if err != nil {
			return nil, 0, err
		}
		resps, taken = []kmsg.Response{resp}, 1
	} else if resps, taken, err = c.answerBatch(ctx, b, group); err != nil {
		return nil, 0, err
	}
	d := time.Since(start)
	for i, q := range group[:taken] {
		c.srv.observe(q, resps[i], d)
		if b != nil && b.Owed != nil {
			resps[i] = b.Owed(c, q.req, resps[i])
		}
	}
	return resps, taken, nil
}

// answerBatch runs a group through its batch handler and returns the whole
// answers of the first taken, versioned.
func (c *Conn) answerBatch(ctx context.Context, b *Batch, group []queued) (resps []kmsg.Response, taken int, err error) {
	defer c.recoverHandler(group[0].hdr.key, &err)
	c.clientID.Store(&group[len(group)-1].hdr.clientID)
	reqs := make([]kmsg.Request, len(group))
	for i, q := range group {
		reqs[i] = q.req
	}
	resps, taken, err = b.Answer(ctx, c, reqs)
	if err != nil {
		return nil, 0, err
	}
	for i, a := range resps[:taken] {
		if a != nil {
			a.SetVersion(group[i].hdr.version)
		}
	}
	return resps[:taken], taken, nil
}

// answer runs a Single handler. A panic is turned into an error so that
// one bad request closes one connection and never the process.
func (c *Conn) answer(ctx context.Context, q queued) (resp kmsg.Response, err error) {
	if q.preset != nil {
		return q.preset, nil
	}
	defer c.recoverHandler(q.hdr.key, &err)
	resp, err = q.row.Handler.(Single)(ctx, c, q.req)
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
