package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// FuzzRequestHeader drives the request header parser (api key, version,
// correlation id, client id, the flexible header's tagged fields) with
// arbitrary bytes: it must never panic, and what it admits is a key kmsg
// knows, a non-negative version and a body inside the frame, and re-reads
// the same when the header is rebuilt in front of that body.
func FuzzRequestHeader(f *testing.F) {
	for _, s := range requestHeaderSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, body, err := parseHeader(frame)
		if err != nil {
			return
		}
		if kmsg.RequestForKey(h.key) == nil || h.version < 0 {
			t.Fatalf("admitted key %d v%d", h.key, h.version)
		}
		if len(body) > len(frame)-10 || len(h.clientID) > len(frame)-10 {
			t.Fatalf("body of %d bytes and client id of %d from a %d-byte frame", len(body), len(h.clientID), len(frame))
		}
		if !bytes.HasSuffix(frame, body) {
			t.Fatal("body is not the frame's tail")
		}
		again, rest, err := parseHeader(append(headerBytes(h), body...))
		if err != nil || again.key != h.key || again.version != h.version || again.correlationID != h.correlationID ||
			again.clientID != h.clientID || again.flexible != h.flexible || !bytes.Equal(rest, body) {
			t.Fatalf("rebuilt header reads %+v (%v), want %+v", again, err, h)
		}
	})
}

// headerBytes is h as a request header (v1, or v2 with no tagged fields
// for a flexible version). A header without a client id is sent with the
// null client id.
func headerBytes(h requestHeader) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(h.key))
	b = binary.BigEndian.AppendUint16(b, uint16(h.version))
	b = binary.BigEndian.AppendUint32(b, uint32(h.correlationID))
	if h.clientID == "" {
		b = binary.BigEndian.AppendUint16(b, 0xffff)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.clientID)))
		b = append(b, h.clientID...)
	}
	if h.flexible {
		b = append(b, 0)
	}
	return b
}

func requestHeaderSeeds() [][]byte {
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed-client"))
	api := kmsg.NewPtrApiVersionsRequest()
	api.Version = 3
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 9
	nullID := kmsg.NewRequestFormatter(kmsg.FormatterClientID("")).AppendRequest(nil, kmsg.NewPtrHeartbeatRequest(), 7)
	nullID[12], nullID[13] = 0xff, 0xff // null client id
	tagged := fm.AppendRequest(nil, api, 9)[4:]
	// One unknown tag of 2 bytes in the flexible header.
	tagged = append(append(append([]byte{}, tagged[:10+len("seed-client")]...), 1, 5, 2, 'h', 'i'), tagged[10+len("seed-client")+1:]...)
	return [][]byte{
		fm.AppendRequest(nil, api, 1)[4:],
		fm.AppendRequest(nil, meta, 2)[4:],
		fm.AppendRequest(nil, produce, 3)[4:],
		nullID[4:],
		tagged,
	}
}

// FuzzRequestBody runs every advertised request body through the node's
// own request path: the header built for (key, version), the gate of the
// version table and kmsg's decode (decodeRequest), then the handler the
// table dispatches to (Conn.dispatch) against an in-process dev Queen. A
// handler panic, which dispatch turns into an error that closes one
// connection, fails the target; so does an admitted request outside the
// advertised window. Keys are taken modulo the table so the fuzzer spends
// its time on offered APIs.
func FuzzRequestBody(f *testing.F) {
	for _, s := range requestBodySeeds() {
		f.Add(s.row, s.version, s.body)
	}
	b := devbroker.Start(f, dev.Options{Logger: testLogger()}, nil)
	n := newNodeOn(f, b.URL, nil)
	f.Fuzz(func(t *testing.T, row uint8, version int16, body []byte) {
		r := apiTable[int(row)%len(apiTable)]
		h := requestHeader{key: r.key, version: version, correlationID: 1, clientID: "fuzz"}
		if req := kmsg.RequestForKey(r.key); version >= 0 {
			req.SetVersion(version)
			h.flexible = req.IsFlexible()
		}
		q, err := decodeRequest(append(headerBytes(h), body...))
		if err != nil {
			return
		}
		if q.preset != nil {
			return // ApiVersions outside its window: the preset answer
		}
		if q.hdr.version < r.min || q.hdr.version > r.max {
			t.Fatalf("admitted %s v%d outside v%d-v%d", kmsg.NameForKey(r.key), q.hdr.version, r.min, r.max)
		}
		a, peer := net.Pipe()
		defer a.Close()
		defer peer.Close()
		c := newConn(n, a)
		// A handler that waits (a long poll, a join) ends with the context.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if _, _, err := c.dispatch(ctx, []queued{q}); err != nil && strings.Contains(err.Error(), "handler panic") {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.key), q.hdr.version, err)
		}
	})
}

type bodySeed struct {
	row     uint8
	version int16
	body    []byte
}

// requestBodySeeds is every row at its lowest and highest version with a
// default body, plus a few bodies that name a topic.
func requestBodySeeds() []bodySeed {
	var out []bodySeed
	for i, r := range apiTable {
		for _, v := range []int16{r.min, r.max} {
			req := kmsg.RequestForKey(r.key)
			req.SetVersion(v)
			out = append(out, bodySeed{uint8(i), v, req.AppendTo(nil)})
		}
	}
	rowOf := func(key int16) uint8 {
		for i, r := range apiTable {
			if r.key == key {
				return uint8(i)
			}
		}
		panic("no row")
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 5
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", 2, 1
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 6
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	// Fetch sessions: a full fetch opening one, an incremental one with a
	// forgotten partition, and one by topic id.
	var fetches []bodySeed
	for _, v := range []int16{12, 13} {
		for _, epoch := range []int32{0, 1} {
			fr := kmsg.NewPtrFetchRequest()
			fr.Version, fr.SessionID, fr.SessionEpoch = v, epoch*7, epoch
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "orders", [16]byte{1}
			ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
			fr.Topics = []kmsg.FetchRequestTopic{ft}
			fg := kmsg.NewFetchRequestForgottenTopic()
			fg.Topic, fg.TopicID, fg.Partitions = "orders", [16]byte{1}, []int32{1}
			fr.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{fg}
			fetches = append(fetches, bodySeed{rowOf(fr.Key()), v, fr.AppendTo(nil)})
		}
	}
	return append(append(out, fetches...),
		bodySeed{rowOf(meta.Key()), 9, meta.AppendTo(nil)},
		bodySeed{rowOf(create.Key()), 5, create.AppendTo(nil)},
		bodySeed{rowOf(commit.Key()), 6, commit.AppendTo(nil)},
	)
}

// FuzzSaslPlain drives the SASL PLAIN message parser, both as the bytes of
// a SaslAuthenticate request and as the bare token frame of the v0 flow:
// never a panic, and an accepted message has a non-empty username and
// password that are its second and third NUL-separated fields, the
// username sanitized for the logs it labels (a username of control bytes
// only is accepted, as Kafka's PLAIN server accepts it, and logs empty).
func FuzzSaslPlain(f *testing.F) {
	for _, s := range saslPlainSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		q, err := rawTokenRequest(msg)
		if err != nil {
			t.Fatalf("raw token refused: %v", err)
		}
		user, password, ok := parsePlain(q.req.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes)
		if !ok {
			return
		}
		parts := bytes.Split(msg, []byte{0})
		if len(parts) != 3 || len(parts[1]) == 0 || password == "" || password != string(parts[2]) || user != queen.Sanitize(string(parts[1])) {
			t.Fatalf("accepted %q as user %q password %q", msg, user, password)
		}
	})
}

func saslPlainSeeds() [][]byte {
	return [][]byte{
		[]byte("\x00alice\x00token-1"),
		[]byte("admin\x00alice\x00token-1"),
		[]byte("\x00\x00token"),
		[]byte("\x00alice\x00"),
		[]byte("\x00al\x1bice\x00tok\x00en"),
	}
}
