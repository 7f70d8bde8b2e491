package node

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/transport"
)

// testEnv is the minimum environment a node boots with.
func testEnv(queenURL string) map[string]string {
	return map[string]string{
		"QUEEN_URL":                      queenURL,
		"QUEEN_KAFKA_ADDR":               "127.0.0.1:0",
		"QUEEN_KAFKA_ADVERTISED_ADDR":    "kafka.test:9092",
		"QUEEN_KAFKA_DEFAULT_PARTITIONS": "4",
		"QUEEN_KAFKA_MAX_CONNECTIONS":    "16",
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newTestNode builds a node over an in-process dev broker without binding.
func newTestNode(t *testing.T, env map[string]string) (*Node, *devQueen) {
	t.Helper()
	fq, url := newDevQueen(t)
	return newNodeOn(t, url, env), fq
}

// newNodeOn builds a node in front of an existing dev broker (several nodes
// share one, as facades share one Queen).
func newNodeOn(t testing.TB, url string, env map[string]string) *Node {
	t.Helper()
	e := testEnv(url)
	for k, v := range env {
		e[k] = v
	}
	cfg, err := config.LoadFacade(context.Background(), envconfig.MapLookuper(e))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	n, err := New(cfg, testLogger())
	if err != nil {
		t.Fatalf("new: %v", err)
	}
	return n
}

// serveTestNode binds and serves n on loopback until the test ends.
func serveTestNode(t *testing.T, n *Node) string {
	t.Helper()
	addr, stop := serveStoppable(t, n)
	t.Cleanup(stop)
	return addr
}

// serveStoppable binds and serves n; stop shuts it down and waits for
// Serve to return.
func serveStoppable(t testing.TB, n *Node) (addr string, stop func()) {
	t.Helper()
	a, err := n.Listen()
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- n.Serve(context.Background()) }()
	return a.String(), func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Shutdown(ctx)
		<-done
	}
}

// fixedAddrEnv is env plus one free loopback address as both
// QUEEN_KAFKA_ADDR and QUEEN_KAFKA_ADVERTISED_ADDR: a node restarted on
// the returned env listens where its clients left it.
func fixedAddrEnv(t testing.TB, env map[string]string) (addr string, _ map[string]string) {
	t.Helper()
	addr = fmt.Sprintf("127.0.0.1:%d", testsupport.FreePort(t))
	out := map[string]string{"QUEEN_KAFKA_ADDR": addr, "QUEEN_KAFKA_ADVERTISED_ADDR": addr}
	maps.Copy(out, env)
	return addr, out
}

// producerEpochs is what the facade knows of a producer's epochs.
type producerEpochs struct{ epoch int16 }

// producerState is the facade's state of producer pid (nil: never met).
func (e *dataEnv) producerState(pid int64) *producerEpochs {
	epoch, ok := e.n.sequencer.Epoch(producer.Key{ID: pid})
	if !ok {
		return nil
	}
	return &producerEpochs{epoch: epoch}
}

// testConn is a Conn for driving handlers directly.
func testConn(t *testing.T, n *Node) *transport.Conn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return n.srv.NewConn(a)
}

// kclient is a minimal Kafka client over one TCP connection.
type kclient struct {
	t    *testing.T
	nc   net.Conn
	br   *bufio.Reader
	fmtr *kmsg.RequestFormatter
	corr int32
}

func dial(t *testing.T, addr string) *kclient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &kclient{t: t, nc: nc, br: bufio.NewReader(nc), fmtr: kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))}
}

// send writes req and returns its correlation id.
func (k *kclient) send(req kmsg.Request) int32 {
	k.t.Helper()
	k.corr++
	if _, err := k.nc.Write(k.fmtr.AppendRequest(nil, req, k.corr)); err != nil {
		k.t.Fatalf("write: %v", err)
	}
	return k.corr
}

// recv reads one response to req (for its version), returning its
// correlation id.
func (k *kclient) recv(req kmsg.Request) (int32, kmsg.Response) {
	k.t.Helper()
	_ = k.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	frame, err := transport.ReadFrame(k.br, transport.MaxFrame)
	if err != nil {
		k.t.Fatalf("read response: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		r := &kbin.Reader{Src: body}
		kmsg.SkipTags(r)
		if err := r.Complete(); err != nil {
			k.t.Fatalf("response header: %v", err)
		}
		body = r.Src
	}
	resp := req.ResponseKind()
	if err := resp.ReadFrom(body); err != nil {
		k.t.Fatalf("decode %T: %v", resp, err)
	}
	return corr, resp
}

func (k *kclient) roundTrip(req kmsg.Request) kmsg.Response {
	k.t.Helper()
	want := k.send(req)
	got, resp := k.recv(req)
	if got != want {
		k.t.Fatalf("correlation id %d, want %d", got, want)
	}
	return resp
}

// expectClosed asserts the facade closes the connection without a frame.
func (k *kclient) expectClosed() {
	k.t.Helper()
	_ = k.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := k.br.ReadByte()
	if err == nil {
		k.t.Fatalf("expected the connection closed, read byte %#x", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		k.t.Fatalf("connection still open after 5s")
	}
}

// apiRows is the version table's rows as tests read them (keys, windows,
// reasons): their handlers are bound to no node.
var apiRows = (*Node)(nil).apiTable()

// testTable is apiRows indexed, as the wire gates requests with it.
var testTable = transport.NewTable(apiRows)

// runRow runs req through row's handler, a Single or a Batch of one.
func runRow(ctx context.Context, row transport.Row, c *transport.Conn, req kmsg.Request) (kmsg.Response, error) {
	switch h := row.Handler.(type) {
	case transport.Single:
		return h(ctx, c, req)
	case *transport.Batch:
		resps, _, err := h.Answer(ctx, c, []kmsg.Request{req})
		if err != nil {
			return nil, err
		}
		return resps[0], nil
	}
	panic("a row without a handler")
}

// handleProduce runs one produce request as Produce's batch handler runs a
// group of one, and returns its whole answer (acks=0 included).
func (n *Node) handleProduce(ctx context.Context, c *transport.Conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resps, _, err := n.answerProduce(ctx, c, []kmsg.Request{req})
	if err != nil {
		return nil, err
	}
	return resps[0], nil
}
