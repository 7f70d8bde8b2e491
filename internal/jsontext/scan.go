package jsontext

import "encoding/binary"

// ScanString passes the JSON string token whose opening quote is b[i]
// and returns the index just past its closing quote, and whether the token
// holds an escape (its text is then not its value). Escapes are validated
// and raw control bytes refused, as JSON requires; every other byte passes,
// even invalid UTF-8, whose decoding is the caller's rule. On a malformed
// token bad says why and end is where it was found. The client's response
// decoders and the dev broker's push scanner all read strings through it.
func ScanString(b []byte, i int) (end int, escaped bool, bad string) {
	i++ // opening quote
	for i < len(b) {
		// Payload strings (base64 values) are long: pass 8 plain bytes at
		// a time while none is a quote, a backslash or a control byte.
		for i+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			break
		}
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped, ""
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return i, false, "unterminated escape"
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return i, false, `short \u escape`
				}
				for _, h := range b[i+2 : i+6] {
					if !isHex(h) {
						return i, false, `bad \u escape`
					}
				}
				i += 6
			default:
				return i, false, "bad escape"
			}
		case c < 0x20:
			return i, false, "control character in string"
		default:
			i++
		}
	}
	return len(b), false, "unterminated string"
}

// SkipSpace returns the index of the first byte of b at or after i
// that is not JSON whitespace (len(b) if none is).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

const (
	lsb8 = 0x0101010101010101
	msb8 = 0x8080808080808080
)

// plain8 reports that none of the 8 bytes in x is below 0x20, '"' or '\\'
// (the SWAR zero-byte test: a byte b is flagged by (b - n) & ^b & 0x80).
func plain8(x uint64) bool {
	quote := x ^ ('"' * lsb8)
	backslash := x ^ ('\\' * lsb8)
	special := (x-0x20*lsb8) & ^x | (quote-lsb8) & ^quote | (backslash-lsb8) & ^backslash
	return special&msb8 == 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// PlainASCII reports that b is printable ASCII without a backslash: a JSON
// string body whose text is its value (b holds no quote: the caller cut it
// at the first one).
func PlainASCII(b []byte) bool {
	for len(b) >= 8 {
		x := binary.LittleEndian.Uint64(b)
		if x&msb8 != 0 || !plain8(x) {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x80 || c == '\\' {
			return false
		}
	}
	return true
}

// Compacted reports JSON text with no whitespace outside its strings, which
// it passes 8 bytes at a time (ScanString): what json.Compact would leave as
// it is, when the text is valid. A string that does not end is not.
func Compacted(v []byte) bool {
	for i := 0; i < len(v); {
		switch v[i] {
		case ' ', '\t', '\n', '\r':
			return false
		case '"':
			end, _, bad := ScanString(v, i)
			if bad != "" {
				return false
			}
			i = end
		default:
			i++
		}
	}
	return true
}
