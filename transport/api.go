package node

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc answers one decoded request. A nil response sends no frame
// (acks=0 produce); an error closes the connection with a log line.
type handlerFunc func(n *Node, ctx context.Context, c *Conn, req kmsg.Request) (kmsg.Response, error)

// handle adapts a typed handler method, e.g. handle((*Node).handleProduce).
func handle[T kmsg.Request](fn func(*Node, context.Context, *Conn, T) (kmsg.Response, error)) handlerFunc {
	return func(n *Node, ctx context.Context, c *Conn, r kmsg.Request) (kmsg.Response, error) {
		return fn(n, ctx, c, r.(T))
	}
}

// apiRow is one row of the version table: the window advertised in
// ApiVersions and enforced on every request, and the handler behind it.
type apiRow struct {
	key      int16
	min, max int16
	handler  handlerFunc
	// why says where the window ends and why, for the README's support
	// matrix (TestREADMESupportMatrix keeps the README in step).
	why string
}
