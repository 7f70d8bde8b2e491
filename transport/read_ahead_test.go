package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceFrame is a size-prefixed Produce v3 request whose one partition
// carries records bytes of records bytes (never decoded here).
func produceFrame(id int32, records int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 3, -1, 1000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = make([]byte, records)
	tp.Partitions = append(tp.Partitions, pp)
	req.Topics = append(req.Topics, tp)
	body := append(headerBytes(requestHeader{key: kmsg.Produce.Int16(), version: 3, correlationID: id}), req.AppendTo(nil)...)
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// pipelined starts a connection of a fresh server and writes frames to it
// from a client that does not wait for answers, as a producer pipelines.
func pipelined(t *testing.T, frames ...[]byte) *Conn {
	t.Helper()
	cli, srv := net.Pipe()
	t.Cleanup(func() { cli.Close(); srv.Close() })
	c := newConn(NewServer(Config{Table: testTable}), srv)
	go func() {
		for _, f := range frames {
			if _, err := cli.Write(f); err != nil {
				return
			}
		}
	}()
	return c
}

// TestReadAheadIsBounded: a connection reads a producer's pipelined
// requests ahead of the one being answered only up to readAheadBytes: the
// next one waits, unread, until an answer gives bytes back (issue 20: with
// a whole maximum frame of read-ahead, one producer's 6 MB requests piled
// up in the facade's memory).
func TestReadAheadIsBounded(t *testing.T) {
	const each = readAheadBytes * 2 / 5 // two fit, the third does not
	c := pipelined(t, produceFrame(1, each), produceFrame(2, each), produceFrame(3, each))
	ctx := context.Background()
	first, err := c.readRequest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.readRequest(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if q, err := c.readRequest(short); err == nil {
		t.Fatalf("a third request (correlation %d) was read ahead past %d bytes held", q.hdr.correlationID, 2*each)
	} else if !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the third request failed with %v, want a wait for the read-ahead budget", err)
	}
	// The first answered, the third is read.
	c.release(first.size)
	third, err := c.readRequest(ctx)
	if err != nil || third.hdr.correlationID != 3 {
		t.Fatalf("after an answer the third request reads as %d, %v", third.hdr.correlationID, err)
	}
}

// TestReadAheadAdmitsOneLargeFrame: a frame above readAheadBytes (up to
// MaxFrame) is still read, when the connection holds no other.
func TestReadAheadAdmitsOneLargeFrame(t *testing.T) {
	c := pipelined(t, produceFrame(1, readAheadBytes+1<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q, err := c.readRequest(ctx)
	if err != nil || q.hdr.correlationID != 1 {
		t.Fatalf("a %d-byte frame alone reads as %d, %v", readAheadBytes+1<<20, q.hdr.correlationID, err)
	}
}
