package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/bufpool"
)

// Frame ceilings of the operator page. MaxFrame bounds every request and
// response; PreAuthMaxFrame is what a connection that must still
// authenticate (SASL) may send, so an unauthenticated peer cannot make the
// facade allocate.
const (
	MaxFrame        = 100 << 20
	PreAuthMaxFrame = 64 << 10
)

// errFrameTooLarge is a size prefix above the connection's ceiling.
var errFrameTooLarge = errors.New("frame above the ceiling")

// requestHeader is Kafka's request header v1 (or v2, which adds tagged
// fields, for a flexible request version).
type requestHeader struct {
	key           int16
	version       int16
	correlationID int32
	clientID      string
	flexible      bool
}

// frameChunk is the buffer a frame body starts with (the whole body when
// smaller); the buffer then doubles, up to the declared size, only as the
// bytes arrive. A size prefix alone therefore allocates at most this: a
// peer declaring 100 MiB and sending ten bytes costs what it sent.
const frameChunk = 64 << 10

// pooledWholeFrame: a buffer for the whole frame is taken once
// the bytes charged are at least 1/pooledWholeFrame of it, so what a frame
// holds stays within that multiple of what it was charged.
const pooledWholeFrame = 4

// readFrame reads one size-prefixed frame, refusing a size outside
// [0, limit] before allocating anything.
func ReadFrame(r io.Reader, limit int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n, err := frameSize(size[:], limit)
	if err != nil {
		return nil, err
	}
	frame, _, err := readBody(r, n, nil)
	return frame, err
}

// frameSize checks a size prefix against the ceiling.
func frameSize(prefix []byte, limit int32) (int32, error) {
	n := int32(binary.BigEndian.Uint32(prefix))
	if n < 0 || n > limit {
		return 0, fmt.Errorf("%w: size %d, limit %d", errFrameTooLarge, n, limit)
	}
	return n, nil
}

// readBody reads an n-byte frame body into a buffer that grows with what
// has arrived: frameChunk first, then doubling, never past n. charge, when
// set, is asked for every byte of buffer before it is read into (a
// budget), and its error ends the read. charged is what was asked of it,
// which the caller gives back, on error as well; after a whole body it is
// n. The buffers are pooled (bufpool): a frame the caller is done with may
// be given back with bufpool.Put.
func readBody(r io.Reader, n int32, charge func(int64) error) (frame []byte, charged int64, err error) {
	var buf []byte
	limit := 0 // the bytes charged so far, which buf may be filled to
	for len(buf) < int(n) {
		if len(buf) == limit {
			grown := min(max(2*limit, frameChunk), int(n))
			if charge != nil {
				if err := charge(int64(grown - limit)); err != nil {
					bufpool.Put(buf)
					return nil, charged, err
				}
				charged += int64(grown - limit)
			}
			if grown > cap(buf) {
				// A buffer for the whole frame, pooled or fresh, is taken
				// once a quarter of the frame is charged: it spares the
				// doubling's last copies, and the buffers of a quarter to
				// a half of the frame that the pools would then keep for
				// nothing else. Before, the buffer doubles. Either may
				// hold more than was charged; only what was charged is
				// read into it. Taken earlier, a buffer for the whole
				// frame could be pinned by a size prefix alone.
				want := grown
				if int(n) <= pooledWholeFrame*grown {
					want = int(n)
				}
				next := bufpool.Get(want)
				next = append(next, buf...)
				bufpool.Put(buf)
				buf = next
			}
			limit = grown
		}
		m, err := io.ReadFull(r, buf[len(buf):limit])
		buf = buf[:len(buf)+m]
		if err != nil {
			bufpool.Put(buf)
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the frame had begun
			}
			return nil, charged, err
		}
	}
	if buf == nil {
		buf = []byte{}
	}
	return buf, charged, nil
}

// parseHeader splits a frame into its header and body. The header's shape
// depends on whether the request version is flexible, which kmsg knows;
// a key kmsg does not know is refused here since its header cannot be read.
func parseHeader(frame []byte) (requestHeader, []byte, error) {
	var h requestHeader
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("request header truncated: %d bytes", len(frame))
	}
	h.key = int16(binary.BigEndian.Uint16(frame[0:]))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.correlationID = int32(binary.BigEndian.Uint32(frame[4:]))
	cl := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	switch {
	case cl == -1:
	case cl < 0 || int(cl) > len(rest):
		return h, nil, fmt.Errorf("request header client_id length %d invalid", cl)
	default:
		h.clientID = string(rest[:cl])
		rest = rest[cl:]
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return h, nil, fmt.Errorf("unknown api key %d", h.key)
	}
	if h.version < 0 {
		return h, nil, fmt.Errorf("negative api version %d", h.version)
	}
	req.SetVersion(h.version)
	h.flexible = req.IsFlexible()
	if h.flexible {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return h, nil, fmt.Errorf("request header tagged fields: %w", err)
		}
	}
	return h, rest, nil
}

// skipTags skips one tagged-field section: a count then (tag, size, bytes).
func skipTags(b []byte) ([]byte, error) {
	n, b, err := uvarint(b)
	if err != nil {
		return nil, err
	}
	for ; n > 0; n-- {
		if _, b, err = uvarint(b); err != nil {
			return nil, err
		}
		var size uint64
		if size, b, err = uvarint(b); err != nil {
			return nil, err
		}
		if size > uint64(len(b)) {
			return nil, fmt.Errorf("tag of %d bytes past the end", size)
		}
		b = b[size:]
	}
	return b, nil
}

func uvarint(b []byte) (uint64, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > 1<<31 {
		return 0, nil, errors.New("bad uvarint")
	}
	return v, b[n:], nil
}

// decodeBody reads a request body at the header's version with kmsg.
func decodeBody(h requestHeader, body []byte) (kmsg.Request, error) {
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return nil, fmt.Errorf("unknown api key %d", h.key)
	}
	req.SetVersion(h.version)
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("%s v%d body: %w", kmsg.NameForKey(h.key), h.version, err)
	}
	return req, nil
}

// appendResponse frames resp for correlationID. Every response header is v0
// (correlation id) or, for a flexible request, v1 (plus empty tagged
// fields) — except ApiVersions, whose response header is always v0 so that
// a client that does not yet know the broker's versions can read it.
func appendResponse(dst []byte, correlationID int32, flexibleHeader bool, resp kmsg.Response) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(correlationID))
	if flexibleHeader && resp.Key() != kmsg.ApiVersions.Int16() {
		dst = append(dst, 0)
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}
