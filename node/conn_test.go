package node

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

func TestApiVersionsOverTCP(t *testing.T) {
	n, _ := newTestNode(t, nil)
	k := dial(t, serveTestNode(t, n))
	for _, v := range []int16{0, 1, 2, 3, 4, 5} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
		resp := k.roundTrip(req).(*kmsg.ApiVersionsResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.ErrorCode)
		}
		if len(resp.ApiKeys) != len(apiRows) {
			t.Fatalf("v%d: %d keys, want %d", v, len(resp.ApiKeys), len(apiRows))
		}
	}
}

// A client that leads with a newer ApiVersions than the window's (v6) is
// answered UNSUPPORTED_VERSION with the table, encoded at v0.
func TestApiVersionsUnknownVersionAnswersTableAtV0(t *testing.T) {
	n, _ := newTestNode(t, nil)
	k := dial(t, serveTestNode(t, n))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 6
	corr := k.send(req)
	v0 := kmsg.NewPtrApiVersionsRequest() // decode at v0
	got, r := k.recv(v0)
	resp := r.(*kmsg.ApiVersionsResponse)
	if got != corr || resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("corr %d/%d, error %d", got, corr, resp.ErrorCode)
	}
	var found bool
	for _, key := range resp.ApiKeys {
		if key.ApiKey == kmsg.ApiVersions.Int16() && key.MinVersion == 0 && key.MaxVersion == 5 {
			found = true
		}
	}
	if !found {
		t.Fatalf("ApiVersions window missing from %+v", resp.ApiKeys)
	}
	// The connection stays usable: the retry at v5 is answered.
	req5 := kmsg.NewPtrApiVersionsRequest()
	req5.Version = 5
	if resp := k.roundTrip(req5).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("retry at v5: error %d", resp.ErrorCode)
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	n, fq := newTestNode(t, nil)
	fq.addQueue("orders", 2)
	k := dial(t, serveTestNode(t, n))
	var reqs []kmsg.Request
	var wire []byte
	for i := 0; i < 40; i++ {
		var req kmsg.Request
		if i%2 == 0 {
			m := kmsg.NewPtrMetadataRequest()
			m.Version = int16(i % 10)
			m.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
			req = m
		} else {
			a := kmsg.NewPtrApiVersionsRequest()
			a.Version = int16(i % 4)
			req = a
		}
		reqs = append(reqs, req)
		wire = append(wire, k.fmtr.AppendRequest(nil, req, int32(i+1))...) // it frames from dst[0]
	}
	if _, err := k.nc.Write(wire); err != nil { // all at once: pipelined
		t.Fatal(err)
	}
	for i, req := range reqs {
		corr, resp := k.recv(req)
		if corr != int32(i+1) {
			t.Fatalf("response %d has correlation id %d", i+1, corr)
		}
		if m, ok := resp.(*kmsg.MetadataResponse); ok && (len(m.Topics) != 1 || len(m.Topics[0].Partitions) != 4) {
			t.Fatalf("metadata %d: %+v", i, m.Topics)
		}
	}
}

func TestUnsupportedKeyOrVersionClosesConnection(t *testing.T) {
	n, _ := newTestNode(t, nil)
	addr := serveTestNode(t, n)

	k := dial(t, addr)
	k.send(kmsg.NewPtrDeleteRecordsRequest()) // "Not offered"
	k.expectClosed()

	k = dial(t, addr)
	m := kmsg.NewPtrMetadataRequest()
	row, _ := testTable.Row(m.Key())
	m.Version = row.Max + 1 // above the window (kmsg encodes it as its newest)
	k.send(m)
	k.expectClosed()
}

func TestOversizedFrameCloses(t *testing.T) {
	n, _ := newTestNode(t, nil)
	k := dial(t, serveTestNode(t, n))
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], transport.MaxFrame+1)
	if _, err := k.nc.Write(size[:]); err != nil {
		t.Fatal(err)
	}
	k.expectClosed()
}

func TestGarbageClosesOnlyThatConnection(t *testing.T) {
	n, _ := newTestNode(t, nil)
	addr := serveTestNode(t, n)
	good := dial(t, addr)
	bad := dial(t, addr)
	garbage := []byte{0, 0, 0, 6, 0xff, 0xff, 1, 2, 3, 4} // key -1
	if _, err := bad.nc.Write(garbage); err != nil {
		t.Fatal(err)
	}
	bad.expectClosed()
	truncated := dial(t, addr)
	if _, err := truncated.nc.Write([]byte{0, 0, 0, 12, 0, 3, 0, 9, 0, 0, 0, 1, 0, 40, 'x', 'y'}); err != nil {
		t.Fatal(err) // Metadata v9 with a client id longer than the frame
	}
	truncated.expectClosed()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	if resp := good.roundTrip(req).(*kmsg.ApiVersionsResponse); resp.ErrorCode != 0 {
		t.Fatalf("the healthy connection was disturbed: %d", resp.ErrorCode)
	}
}

func TestMaxConnectionsClosesNewConnection(t *testing.T) {
	n, _ := newTestNode(t, nil) // QUEEN_KAFKA_MAX_CONNECTIONS=16
	addr := serveTestNode(t, n)
	req := kmsg.NewPtrApiVersionsRequest()
	for i := 0; i < 16; i++ {
		dial(t, addr).roundTrip(req) // served: registered before the next dial
	}
	over := dial(t, addr)
	over.expectClosed()
}

func TestIdleAndHalfFrameTimeouts(t *testing.T) {
	n, _ := newTestNode(t, nil)
	n.srv.IdleTimeout = 200 * time.Millisecond
	n.srv.FrameTimeout = 100 * time.Millisecond
	addr := serveTestNode(t, n)
	dial(t, addr).expectClosed() // sends nothing: idle
	k := dial(t, addr)
	if _, err := k.nc.Write([]byte{0, 0, 0, 50, 0}); err != nil { // half a frame
		t.Fatal(err)
	}
	k.expectClosed()
}

// Shutdown closes the listener, lets the served connection finish, and
// only then runs the release steps.
func TestShutdownDrainsThenReleases(t *testing.T) {
	n, _ := newTestNode(t, nil)
	addr, err := n.Listen()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(context.Background()) }()
	k := dial(t, addr.String())
	k.roundTrip(kmsg.NewPtrApiVersionsRequest())

	var connsAtRelease = -1
	n.OnRelease(func(context.Context) error {
		n.mu.Lock()
		connsAtRelease = n.srv.Connections()
		n.mu.Unlock()
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if connsAtRelease != 0 {
		t.Fatalf("release ran with %d connections open", connsAtRelease)
	}
	k.expectClosed()
	if c, err := net.DialTimeout("tcp", addr.String(), time.Second); err == nil {
		c.Close()
		t.Fatalf("listener still accepting after shutdown")
	}
}
