package transport

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
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
		q, err := testTable.rawTokenRequest(msg)
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
