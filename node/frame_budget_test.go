package node

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/transport"
)

// frameChunk is the buffer the wire starts a frame body with.
const frameChunk = 64 << 10

// The node's frame budget is shared by every connection: a request that
// cannot get its share within its frame's deadline closes its connection;
// frames being read hold what they have allocated, until they end; and a
// connection that ends, however, gives back all it held.
func TestFrameBudgetAcrossConnections(t *testing.T) {
	n, _ := newTestNode(t, nil)
	n.srv.Frames = budget.New(4 * frameChunk)
	n.srv.FrameTimeout = time.Second
	addr := serveTestNode(t, n)

	// With the whole budget held elsewhere, a request waits out its
	// frame's deadline and its connection is closed.
	if err := n.srv.Frames.Acquire(context.Background(), n.srv.Frames.Size()); err != nil {
		t.Fatal(err)
	}
	starved := dial(t, addr)
	starved.send(kmsg.NewPtrApiVersionsRequest())
	starved.expectClosed()
	n.srv.Frames.Release(n.srv.Frames.Size())

	// A holds the whole budget with a frame it is still sending; B's
	// request is answered once A goes.
	a := dial(t, addr)
	var prefix [4]byte
	binary.BigEndian.PutUint32(prefix[:], transport.MaxFrame)
	if _, err := a.nc.Write(append(prefix[:], make([]byte, 2*frameChunk)...)); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 10*time.Second, "A's frame to hold the budget", func() bool { return n.srv.Frames.Free() == 0 })
	b := dial(t, addr)
	corr := b.send(kmsg.NewPtrApiVersionsRequest())
	a.nc.Close()
	if got, resp := b.recv(kmsg.NewPtrApiVersionsRequest()); got != corr || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Fatalf("ApiVersions behind a frame holding the budget: correlation %d, %+v", got, resp)
	}

	// Pipelined requests read and never answered: the connection goes,
	// and so does every byte it held.
	c := dial(t, addr)
	for range 8 {
		c.send(kmsg.NewPtrApiVersionsRequest())
	}
	c.nc.Close()
	b.nc.Close()
	testsupport.WaitFor(t, 10*time.Second, "every byte of the frame budget back", func() bool { return n.srv.Frames.Free() == n.srv.Frames.Size() })
}
