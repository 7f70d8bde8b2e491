package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
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
		req := kmsg.NewPtrProduceRequest()
		req.Acks = -1
		req.TimeoutMillis = 5000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "__consumer_offsets"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, "x")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := seed.Request(ctx, req)
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
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID = -1
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.FetchOffset = 5
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		raw, err := cl.Request(ctx, req) // routed to the partition's leader
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

	t.Run("metadata-below-v4-autocreates", func(t *testing.T) {
		// Below v4 the request has no flag, and the schema default is "allowed".
		topic := uniq("mdv3")
		// franz-go sends the highest version both sides allow, so cap the
		// client at Kafka 0.10.2, whose Metadata is v2.
		old := newKgo(t, tg.bootstrap, kgo.MaxVersions(kversion.V0_10_2()))
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = false // not on the wire below v4
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, mt)
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
		req.CoordinatorKey = string(long)
		raw, err := seed.Request(ctx, req)
		if err != nil {
			t.Fatalf("find coordinator: %v", err)
		}
		fc := raw.(*kmsg.FindCoordinatorResponse)
		code := fc.ErrorCode
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
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	apiVersions := func(c net.Conn) error {
		// Request header v1: api key 18, version 0, correlation id 7, null
		// client id; an ApiVersions v0 body is empty.
		msg := []byte{0, 18, 0, 0, 0, 0, 0, 7, 0xff, 0xff}
		frame := append([]byte{0, 0, 0, byte(len(msg))}, msg...)
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return err
		}
		var size [4]byte
		if _, err := ioReadFull(c, size[:]); err != nil {
			return err
		}
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		buf := make([]byte, n)
		_, err := ioReadFull(c, buf)
		return err
	}
	for i := 0; i < 16; i++ {
		c, err := net.Dial("tcp", fac.addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i+1, err)
		}
		if err := apiVersions(c); err != nil {
			t.Fatalf("connection %d of 16 not served: %v", i+1, err)
		}
		conns = append(conns, c)
	}
	extra, err := net.Dial("tcp", fac.addr)
	if err != nil {
		t.Fatalf("17th dial: %v", err)
	}
	if err := apiVersions(extra); err == nil {
		t.Errorf("the 17th connection was served past QUEEN_KAFKA_MAX_CONNECTIONS=16")
	}
	extra.Close()
	conns[0].Close()
	conns = conns[1:]
	eventually(t, 5*time.Second, "a freed slot serves a new connection", func() (bool, string) {
		c, err := net.Dial("tcp", fac.addr)
		if err != nil {
			return false, err.Error()
		}
		if err := apiVersions(c); err != nil {
			c.Close()
			return false, err.Error()
		}
		conns = append(conns, c)
		return true, ""
	})
}

func ioReadFull(c net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := c.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
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
	if !fac.signal(syscall.SIGTERM, 5*time.Second) {
		t.Fatalf("facade still running 5 s after SIGTERM")
	}
	fac.mu.Lock()
	code := fac.exitCode
	fac.mu.Unlock()
	if code != 0 {
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
