package jsontext

import "testing"

func TestPlain8(t *testing.T) {
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 8; pos++ {
			b := []byte("abcdefgh")
			b[pos] = byte(c)
			x := uint64(0)
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(b[i])
			}
			want := c >= 0x20 && c != '"' && c != '\\'
			if plain8(x) != want {
				t.Fatalf("byte %#x at %d: plain8 %v", c, pos, !want)
			}
		}
	}
}
