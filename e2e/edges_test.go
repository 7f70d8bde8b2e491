package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// testEdges: the documented corners a client can reach on the data path.
func testEdges(t *testing.T, tg target) {
	ctx := ctxT(t, 60*time.Second)
	cl := newKgo(t, tg.bootstrap)
	seed := cl.SeedBrokers()[0]

	t.Run("acks=0", func(t *testing.T) {
		// No response frame, and the record is still written.
		topic := uniq("acks0")
		createTopic(t, tg, topic, 1, nil)
		p := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite())
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte("fire and forget")}).FirstErr(); err != nil {
			t.Fatalf("acks=0 produce: %v", err)
		}
		eventually(t, 5*time.Second, "acks=0 record stored", func() (bool, string) {
			res := tg.dev.fetch(t, topic, "0", 0)
			return res.HighWatermark == 1, fmt.Sprintf("hw %d", res.HighWatermark)
		})
	})

	t.Run("internal-topic-produce", func(t *testing.T) {
		raw, err := seed.Request(ctx, produceRaw("__consumer_offsets", 0, 5000, rawBatch(-1, -1, -1, "x")))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if code := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code == 0 {
			t.Errorf("produce to __consumer_offsets accepted, want a refusal")
		}
		if res := tg.dev.fetch(t, "__consumer_offsets", "0", 0); res.Error != "UNKNOWN_TOPIC_OR_PARTITION" {
			t.Errorf("__consumer_offsets exists in Queen after a produce: %+v", res)
		}
	})

	t.Run("fetch-out-of-range", func(t *testing.T) {
		topic := uniq("oor")
		createTopic(t, tg, topic, 1, nil)
		produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("only")}})
		raw, err := cl.Request(ctx, fetchP0(topic, 0, 5)) // routed to the partition's leader
		if err != nil {
			t.Fatalf("fetch: %v", err)
		}
		p := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != kerr.OffsetOutOfRange.Code || p.HighWatermark != 1 || p.LogStartOffset != 0 {
			t.Errorf("fetch at 5 of a 1-record log: error %d hw %d start %d, want OFFSET_OUT_OF_RANGE 1 0", p.ErrorCode, p.HighWatermark, p.LogStartOffset)
		}
		// A consumer told to start past the end resets to the end: it never
		// sees offset 0, and reads records produced after it, at their
		// offsets. Produce until one arrives, so no timing is assumed.
		c := newKgo(t, tg.bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(5)}}),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
		var got []rec
		for next := int64(1); len(got) == 0 && next < 40; next++ {
			produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: next, value: []byte(strconv.FormatInt(next, 10))}})
			pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
			c.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, fromKgo(r)) })
			cancel()
		}
		if len(got) == 0 {
			t.Fatalf("a consumer reset to the end read nothing of 39 later records")
		}
		for _, g := range got {
			if g.offset == 0 || string(g.value) != strconv.FormatInt(g.offset, 10) {
				t.Errorf("after the reset to the end: read %v", g)
			}
		}
	})

	t.Run("wide-topic", func(t *testing.T) {
		// 1,500 partitions: one fetch names more than the 1,024 entries one
		// call to Queen's fetch route may carry, so the facade chunks it.
		topic := uniq("wide")
		createTopic(t, tg, topic, 1500, nil)
		want := []rec{{partition: 0, value: []byte("first")}, {partition: 1023, value: []byte("last of chunk 1")},
			{partition: 1024, value: []byte("first of chunk 2")}, {partition: 1499, value: []byte("last")}}
		produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), want)
		c := newKgo(t, tg.bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		assertRecords(t, "wide topic", want, pollKgo(t, c, len(want), 20*time.Second), recOpts{nullVsEmpty: true})
	})

	t.Run("record-larger-than-fetch-budget", func(t *testing.T) {
		// A 3 MiB record against 1 MiB partition and response budgets: the
		// first batch is always whole, so the consumer never stalls on it.
		topic := uniq("big")
		createTopic(t, tg, topic, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("8388608")})
		big := make([]byte, 3<<20)
		for i := range big {
			big[i] = byte(i * 7)
		}
		want := []rec{{offset: 0, value: big}, {offset: 1, value: []byte("small after big")}}
		cl := newKgo(t, tg.bootstrap, kgo.ProducerBatchMaxBytes(8<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for _, r := range want {
			if err := cl.ProduceSync(ctx, toKgo(topic, r)).FirstErr(); err != nil {
				t.Fatalf("produce %d bytes: %v", len(r.value), err)
			}
		}
		c := newKgo(t, tg.bootstrap, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchMaxPartitionBytes(1<<20), kgo.FetchMaxBytes(1<<20))
		assertRecords(t, "oversized record", want, pollKgo(t, c, len(want), 20*time.Second), recOpts{nullVsEmpty: true})
	})

	t.Run("metadata-below-v4-autocreates", func(t *testing.T) {
		// Below v4 the request has no flag, and the schema default is "allowed".
		topic := uniq("mdv3")
		// franz-go sends the highest version both sides allow, so cap the
		// client at Kafka 0.10.2, whose Metadata is v2.
		old := newKgo(t, tg.bootstrap, kgo.MaxVersions(kversion.V0_10_2()))
		req := metadataReq(topic) // AllowAutoTopicCreation false: not on the wire below v4
		eventually(t, 5*time.Second, "metadata v2 creates "+topic, func() (bool, string) {
			raw, err := old.SeedBrokers()[0].Request(ctx, req)
			if err != nil {
				return false, err.Error()
			}
			resp := raw.(*kmsg.MetadataResponse)
			if resp.Version > 3 {
				return false, fmt.Sprintf("sent at v%d, not below v4", resp.Version)
			}
			tp := resp.Topics[0]
			return tp.ErrorCode == 0 && len(tp.Partitions) > 0, fmt.Sprintf("error %d, %d partitions", tp.ErrorCode, len(tp.Partitions))
		})
		if res := tg.dev.fetch(t, topic, "0", 0); res.Error != "" {
			t.Errorf("metadata v3 answered the topic but Queen has no queue: %+v", res)
		}
	})

	t.Run("session-timeout-outside-window", func(t *testing.T) {
		// The facade's default window is 6 s to 300 s; 1 s is refused.
		topic, group := uniq("sess"), uniq("g-sess")
		createTopic(t, tg, topic, 1, nil)
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group = group
		req.SessionTimeoutMillis = 1000
		req.RebalanceTimeoutMillis = 5000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{topic}
		p.Metadata = meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
		raw, err := cl.Request(ctx, req) // routed to the group's coordinator
		if err != nil {
			t.Fatalf("join: %v", err)
		}
		if code := raw.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InvalidSessionTimeout.Code {
			t.Errorf("JoinGroup with a 1 s session: error %d (%v), want INVALID_SESSION_TIMEOUT", code, kerr.ErrorForCode(code))
		}
	})

	t.Run("group-id-too-long", func(t *testing.T) {
		long := make([]byte, 256)
		for i := range long {
			long[i] = 'g'
		}
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = string(long), []string{string(long)} // v0-v3 and v4+ forms
		raw, err := seed.Request(ctx, req)
		if err != nil {
			t.Fatalf("find coordinator: %v", err)
		}
		fc := raw.(*kmsg.FindCoordinatorResponse)
		code := fc.ErrorCode
		if len(fc.Coordinators) == 1 {
			code = fc.Coordinators[0].ErrorCode
		}
		if code == 0 {
			// A coordinator may be named; the group APIs must refuse the id.
			oreq := kmsg.NewPtrOffsetFetchRequest()
			oreq.Group = string(long)
			oraw, err := cl.Request(ctx, oreq)
			if err != nil && !errors.Is(err, kerr.InvalidGroupID) {
				t.Fatalf("offset fetch: %v", err)
			}
			if err == nil {
				code = oraw.(*kmsg.OffsetFetchResponse).ErrorCode
			} else {
				code = kerr.InvalidGroupID.Code
			}
		}
		if code != kerr.InvalidGroupID.Code {
			t.Errorf("a 256-character group id: error %d (%v), want INVALID_GROUP_ID", code, kerr.ErrorForCode(code))
		}
	})
}

// TestMaxConnections: past QUEEN_KAFKA_MAX_CONNECTIONS a new connection is
// closed at once, and a slot freed is a slot a new client can use.
func TestMaxConnections(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_MAX_CONNECTIONS": "16"})
	// apiVersions is served: an ApiVersions v0 request (empty body) answered.
	apiVersions := func(r *rawConn) error {
		if err := r.trySend(18, 0, 7, nil); err != nil {
			return err
		}
		_, err := r.recv()
		return err
	}
	var conns []*rawConn
	for i := 0; i < 16; i++ {
		r, err := tryDialRaw(t, fac.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		if err := apiVersions(r); err != nil {
			t.Fatalf("connection %d of 16 not served: %v", i+1, err)
		}
		conns = append(conns, r)
	}
	extra, err := tryDialRaw(t, fac.addr)
	if err != nil {
		t.Fatalf("17th dial: %v", err)
	}
	if err := apiVersions(extra); err == nil {
		t.Errorf("the 17th connection was served past QUEEN_KAFKA_MAX_CONNECTIONS=16")
	}
	extra.c.Close()
	conns[0].c.Close()
	eventually(t, 5*time.Second, "a freed slot serves a new connection", func() (bool, string) {
		r, err := tryDialRaw(t, fac.addr)
		if err != nil {
			return false, err.Error()
		}
		if err := apiVersions(r); err != nil {
			r.c.Close()
			return false, err.Error()
		}
		return true, ""
	})
}

// TestGracefulStop: SIGTERM stops a serving facade promptly with exit 0.
func TestGracefulStop(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	fac := startFacade(t, dev, nil)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	topic := uniq("sigterm")
	createTopic(t, tg, topic, 1, nil)
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("x")}})
	start := time.Now()
	if code := fac.terminate(t, 5*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	t.Logf("stopped %.0f ms after SIGTERM", float64(time.Since(start).Microseconds())/1000)
}

// TestQueenRestart: Queen going away is transient for a facade. While
// queen-dev is down a produce fails retriably (the client keeps trying);
// once it is back on the same data directory, the same producer's record
// lands after everything acknowledged before, and nothing is lost.
func TestQueenRestart(t *testing.T) {
	t.Parallel()
	dev := startQueenDev(t, devOptions{})
	fac := startFacade(t, dev, nil)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}
	topic := uniq("qrestart")
	createTopic(t, tg, topic, 1, nil)
	p := newKgo(t, tg.bootstrap, kgo.DefaultProduceTopic(topic), kgo.RecordRetries(1000), kgo.RetryTimeout(60*time.Second))
	ctx := ctxT(t, 60*time.Second)
	for i := 0; i < 3; i++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	dev.kill()
	done := make(chan error, 1)
	go func() {
		pctx, cancel := context.WithTimeout(ctx, 45*time.Second)
		defer cancel()
		done <- p.ProduceSync(pctx, &kgo.Record{Value: []byte("during the outage")}).FirstErr()
	}()
	time.Sleep(1500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("produce finished while Queen was down: %v", err)
	default:
	}
	if err := dev.restart(); err != nil {
		t.Fatalf("restart queen-dev: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("produce across the outage: %v", err)
	}
	got := consumeKgo(t, tg.bootstrap, topic, 1, 4)
	want := []string{"0", "1", "2", "during the outage"}
	for i, g := range got {
		if g.offset != int64(i) || string(g.value) != want[i] {
			t.Errorf("record %d: %v, want offset %d value %q", i, g, i, want[i])
		}
	}
}

// rawConn is one plain TCP connection speaking Kafka frames by hand.
type rawConn struct {
	t testing.TB
	c net.Conn
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	r, err := tryDialRaw(t, addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	return r
}

// tryDialRaw is dialRaw for a test that expects a dial to fail.
func tryDialRaw(t testing.TB, addr string) (*rawConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c}, nil
}

// send writes a request with header v1 (null client id) and body.
func (r *rawConn) send(key, version int16, corr int32, body []byte) {
	r.t.Helper()
	if err := r.trySend(key, version, corr, body); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// trySend is send for a test that expects the write to fail.
func (r *rawConn) trySend(key, version int16, corr int32, body []byte) error {
	msg := []byte{byte(key >> 8), byte(key), byte(version >> 8), byte(version), byte(corr >> 24), byte(corr >> 16), byte(corr >> 8), byte(corr), 0xff, 0xff}
	msg = append(msg, body...)
	return r.tryWrite(append([]byte{byte(len(msg) >> 24), byte(len(msg) >> 16), byte(len(msg) >> 8), byte(len(msg))}, msg...))
}

func (r *rawConn) write(b []byte) {
	r.t.Helper()
	if err := r.tryWrite(b); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

func (r *rawConn) tryWrite(b []byte) error {
	_ = r.c.SetWriteDeadline(time.Now().Add(3 * time.Second))
	_, err := r.c.Write(b)
	return err
}

// recv reads one response frame (without its size prefix), or returns the
// read error (io.EOF / reset when the facade closed the connection).
func (r *rawConn) recv() ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	f, err := readFrame(r.c)
	if err != nil {
		return nil, err
	}
	return f[4:], nil
}

// closedByPeer asserts the facade closes the connection without answering.
func (r *rawConn) closedByPeer(what string) {
	r.t.Helper()
	if b, err := r.recv(); err == nil {
		r.t.Errorf("%s: answered %d bytes, want the connection closed without a frame", what, len(b))
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Errorf("%s: connection left open (no answer, no close within 5 s)", what)
	}
}

// TestMalformedInput: bad frames close one connection and never the
// process; a corrupt batch is refused per partition; versions outside the
// table are refused as seed 001 says.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	dev, fac := sharedEnv(t)
	tg := target{bootstrap: []string{fac.addr}, dev: dev}

	t.Run("oversized-frame", func(t *testing.T) {
		r := dialRaw(t, fac.addr)
		r.write([]byte{0x7f, 0xff, 0xff, 0xff}) // a 2 GiB frame announced
		r.closedByPeer("2 GiB frame")
	})
	t.Run("unknown-api-key", func(t *testing.T) {
		r := dialRaw(t, fac.addr)
		r.send(9999, 0, 1, nil)
		r.closedByPeer("API key 9999")
	})
	t.Run("not-offered-api", func(t *testing.T) {
		r := dialRaw(t, fac.addr)
		r.send(21, 0, 1, []byte{0, 0, 0, 0, 0, 0, 0, 0}) // DeleteRecords
		r.closedByPeer("DeleteRecords")
	})
	t.Run("version-above-window", func(t *testing.T) {
		// One above the newest Metadata kmsg knows, so above any window.
		v := kmsg.NewPtrMetadataRequest().MaxVersion() + 1
		r := dialRaw(t, fac.addr)
		r.send(3, v, 1, []byte{0, 0, 0, 0})
		r.closedByPeer(fmt.Sprintf("Metadata v%d", v))
	})
	t.Run("truncated-body", func(t *testing.T) {
		r := dialRaw(t, fac.addr)
		r.send(0, 7, 1, []byte{0xff}) // Produce v7 with one byte of body
		r.closedByPeer("truncated Produce")
	})
	t.Run("apiversions-above-window", func(t *testing.T) {
		// A client that opens above the window (one above the newest
		// ApiVersions kmsg knows) is answered UNSUPPORTED_VERSION (35)
		// carrying the table, in the v0 shape, so it retries within it.
		v := kmsg.NewPtrApiVersionsRequest().MaxVersion() + 1
		r := dialRaw(t, fac.addr)
		r.send(18, v, 42, []byte{0, 0, 0}) // compact strings + tags, empty
		b, err := r.recv()
		if err != nil {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
		if len(b) < 10 || int32(b[0])<<24|int32(b[1])<<16|int32(b[2])<<8|int32(b[3]) != 42 {
			t.Fatalf("ApiVersions v%d: answer %x", v, b)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(b[4:]); err != nil {
			t.Fatalf("ApiVersions v%d answer is not a v0 body: %v (%x)", v, err, b)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
			t.Errorf("ApiVersions v%d: error %d, %d keys; want UNSUPPORTED_VERSION with the table", v, resp.ErrorCode, len(resp.ApiKeys))
		}
	})
	t.Run("bad-crc", func(t *testing.T) {
		topic := uniq("crc")
		createTopic(t, tg, topic, 1, nil)
		batch := rawBatch(-1, -1, -1, "x")
		batch[len(batch)-1] ^= 0xff // flip a byte the CRC covers
		raw, err := newKgo(t, tg.bootstrap).SeedBrokers()[0].Request(ctxT(t, 10*time.Second), produceRaw(topic, 0, 5000, batch))
		if err != nil {
			t.Fatalf("produce: %v", err)
		}
		if code := raw.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
			t.Errorf("batch with a bad CRC: error %d (%v), want CORRUPT_MESSAGE", code, kerr.ErrorForCode(code))
		}
		if res := dev.fetch(t, topic, "0", 0); res.HighWatermark != 0 {
			t.Errorf("a corrupt batch wrote %d records", res.HighWatermark)
		}
	})
	// The process survived all of it and still serves.
	if !fac.running() {
		t.Fatalf("the facade died")
	}
	topic := uniq("after-garbage")
	createTopic(t, tg, topic, 1, nil)
	produceKgo(t, tg.bootstrap, topic, kgo.NoCompression(), []rec{{offset: 0, value: []byte("still here")}})
}
