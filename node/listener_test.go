package node

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/binary"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/transport"
)

// stubProduce makes n's wire answer Produce (v3-9) with handler; n is not
// served yet.
func stubProduce(n *Node, handler transport.Single) {
	rows := n.apiTable()
	for i, r := range rows {
		if r.Key == kmsg.Produce.Int16() {
			rows[i] = transport.Row{Key: r.Key, Min: 3, Max: 9, Handler: handler}
		}
	}
	n.srv = n.newServer(transport.NewTable(rows))
}

// A handler answering nil (acks=0 produce) sends no frame, and the next
// request's answer is the next frame on the wire.
func TestNilResponseSendsNoFrame(t *testing.T) {
	n, _ := newTestNode(t, nil)
	stubProduce(n, func(context.Context, *transport.Conn, kmsg.Request) (kmsg.Response, error) {
		return nil, nil
	})
	k := dial(t, serveTestNode(t, n))
	p := kmsg.NewPtrProduceRequest()
	p.Version, p.Acks = 7, 0
	k.send(p)
	api := kmsg.NewPtrApiVersionsRequest()
	want := k.send(api)
	if got, _ := k.recv(api); got != want {
		t.Fatalf("first frame answers correlation id %d, want %d (the acks=0 request got a frame)", got, want)
	}
}

func TestTLSListener(t *testing.T) {
	certPath, keyPath := testsupport.WriteCert(t, t.TempDir(), "kafka.test")
	n, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_TLS_CERT": certPath, "QUEEN_KAFKA_TLS_KEY": keyPath})
	addr := serveTestNode(t, n)
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "kafka.test"})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	t.Cleanup(func() { tc.Close() })
	k := &kclient{t: t, nc: tc, br: bufio.NewReader(tc), fmtr: kmsg.NewRequestFormatter()}
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if resp := k.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 || len(resp.ApiKeys) == 0 {
		t.Fatalf("over TLS: %+v", resp)
	}
}

// With QUEEN_KAFKA_FORWARD_SNI_HOST the server name the client dialled is
// the Host of that connection's calls to Queen.
func TestForwardSNIHost(t *testing.T) {
	certPath, keyPath := testsupport.WriteCert(t, t.TempDir(), "tenant-a.kafka.test")
	n, dq := newTestNode(t, map[string]string{"QUEEN_KAFKA_TLS_CERT": certPath, "QUEEN_KAFKA_TLS_KEY": keyPath, "QUEEN_KAFKA_FORWARD_SNI_HOST": "true"})
	hosts := make(chan string, 16)
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/resources/queues" {
			hosts <- r.Host
		}
		return 0, "", ""
	})
	addr := serveTestNode(t, n)
	tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: "tenant-a.kafka.test"})
	if err != nil {
		t.Fatalf("tls dial: %v", err)
	}
	t.Cleanup(func() { tc.Close() })
	k := &kclient{t: t, nc: tc, br: bufio.NewReader(tc), fmtr: kmsg.NewRequestFormatter()}
	k.roundTrip(kmsg.NewPtrMetadataRequest())
	if h := <-hosts; h != "tenant-a.kafka.test" {
		t.Fatalf("Queen saw Host %q", h)
	}
	ids := n.cats.Filed()
	filed := slices.Contains(ids, "host:tenant-a.kafka.test")
	shared := slices.Contains(ids, "")
	if !filed || shared {
		t.Fatal("the forwarded host's topic list must be filed under that host, not the node credential")
	}
}

// A handler whose answer cannot be encoded closes its connection; the
// process and the other connections carry on.
func TestPanickingAnswerClosesOnlyThatConnection(t *testing.T) {
	n, _ := newTestNode(t, nil)
	stubProduce(n, func(context.Context, *transport.Conn, kmsg.Request) (kmsg.Response, error) {
		panic("handler bug")
	})
	addr := serveTestNode(t, n)
	good := dial(t, addr)
	bad := dial(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.Version = 7
	bad.send(p)
	bad.expectClosed()
	if resp := good.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("healthy connection disturbed: %d", resp.ErrorCode)
	}
}

// On a SASL listener an unauthenticated connection may negotiate versions
// and authenticate, nothing else, and its frames are capped at 64 KiB.
func TestPreAuthenticationGate(t *testing.T) {
	n, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	addr := serveTestNode(t, n)

	k := dial(t, addr)
	if resp := k.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions before authentication: %d", resp.ErrorCode)
	}
	k.send(kmsg.NewPtrMetadataRequest())
	k.expectClosed()

	big := dial(t, addr)
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], transport.PreAuthMaxFrame+1)
	if _, err := big.nc.Write(size[:]); err != nil {
		t.Fatal(err)
	}
	big.expectClosed()
}

// On a SASL listener a connection that has not authenticated by its
// deadline is closed, however it spends the time (silent, or negotiating
// versions); one that authenticated in time is not, though its deadline
// passed too.
func TestAuthenticationDeadline(t *testing.T) {
	_, url := newDevQueenTokens(t, saslTokens)
	n := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	n.srv.AuthTimeout = 300 * time.Millisecond
	addr := serveTestNode(t, n)

	authed := saslLogin(t, addr, "svc", "tok-a")
	silent := dial(t, addr)
	chatty := dial(t, addr)
	if resp := chatty.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions before authentication: %d", resp.ErrorCode)
	}
	silent.expectClosed()
	chatty.expectClosed()
	// authed was accepted before both, so its deadline has passed as well.
	if resp := authed.roundTrip(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("authenticated connection after the deadline: %d", resp.ErrorCode)
	}
}

// TestAuthenticationDeadlineBoundsTheCheck: a SaslAuthenticate whose
// token check Queen holds is cut at the authentication deadline and its
// connection closed, instead of holding the slot for Queen's 10 s budget
// (twice: the check, then GET /auth/me).
func TestAuthenticationDeadlineBoundsTheCheck(t *testing.T) {
	dq, url := newDevQueenTokens(t, saslTokens)
	dq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/resources/queues" {
			<-r.Context().Done() // held until the facade gives up on it
		}
		return 0, "", ""
	})
	n := newNodeOn(t, url, map[string]string{"QUEEN_KAFKA_SASL": "plain"})
	n.srv.AuthTimeout = 300 * time.Millisecond
	addr := serveTestNode(t, n)
	saslClosedUnanswered(t, addr, "tok-a")
}
