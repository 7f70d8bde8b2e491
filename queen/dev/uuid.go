package dev

import (
	"encoding/hex"
	"math/rand/v2"
	"time"
)

// uuidLen is a formatted UUID's length.
const uuidLen = 36

// newUUIDv7 is a time-ordered message id (RFC 9562 version 7). The random
// bits come from math/rand/v2's ChaCha8-backed global source: ids must be
// unique, not secret.
func newUUIDv7(t time.Time) string {
	return string(appendUUIDv7(nil, t))
}

// appendUUIDv7s appends n newUUIDv7s of time t to dst, one after another
// (uuidLen bytes each).
func appendUUIDv7s(dst []byte, t time.Time, n int) []byte {
	for range n {
		dst = appendUUIDv7(dst, t)
	}
	return dst
}

func appendUUIDv7(dst []byte, t time.Time) []byte {
	var u [16]byte
	ms := uint64(t.UnixMilli())
	u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	r1, r2 := rand.Uint64(), rand.Uint64()
	for i := 0; i < 2; i++ {
		u[6+i] = byte(r1 >> (8 * i))
	}
	for i := 0; i < 8; i++ {
		u[8+i] = byte(r2 >> (8 * i))
	}
	u[6] = u[6]&0x0f | 0x70
	u[8] = u[8]&0x3f | 0x80
	return appendUUID(dst, u)
}

// newUUID is a random (version 4) UUID, for queue and transaction ids.
func newUUID() string {
	var u [16]byte
	r1, r2 := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		u[i] = byte(r1 >> (8 * i))
		u[8+i] = byte(r2 >> (8 * i))
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return formatUUID(u)
}

func formatUUID(u [16]byte) string { return string(appendUUID(nil, u)) }

func appendUUID(dst []byte, u [16]byte) []byte {
	dst = append(dst, make([]byte, uuidLen)...)
	s := dst[len(dst)-uuidLen:]
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return dst
}
