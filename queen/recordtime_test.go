package queen

import (
	"testing"
	"time"
)

var recordTS = time.Date(2026, 8, 28, 9, 15, 0, 123456000, time.UTC)

func TestTS(t *testing.T) {
	s := FormatTS(recordTS.In(time.FixedZone("x", 3600)))
	if s != "2026-08-28T09:15:00.123456Z" {
		t.Fatal(s)
	}
	if !ParseTS(s).Equal(recordTS) || !ParseTS("garbage").IsZero() {
		t.Fatal("ParseTS")
	}
}
