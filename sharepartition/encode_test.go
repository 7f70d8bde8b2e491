package sharepartition

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func busyPartition() *Partition {
	p := New(testConfig(), 100)
	p.Acquire("m1", 100, 119, 20, t0)
	p.Acquire("member \"two\"", 120, 139, 20, t0.Add(time.Second))
	p.Acknowledge("m1", ack(105, 109, Accept), t0)
	p.Acknowledge("m1", ack(110, 111, Release), t0)
	p.Acknowledge("m1", ack(112, 112, Reject), t0)
	return p
}

func TestEncodingRoundTripAndCompactness(t *testing.T) {
	p := busyPartition()
	b := p.Encode()
	// One range per run of alike records, not one per record.
	want := `{"v":1,"spso":100,"m":["m1","member \"two\""],"r":[[5,1,1,0,1800000030000],[5,2,1],[2,0,1],[1,4,1],[7,1,1,0,1800000030000],[20,1,1,1,1800000031000]]}`
	if string(b) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", b, want)
	}
	q, err := Decode(b, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(p, q) || !bytes.Equal(q.Encode(), b) {
		t.Fatal("decode(encode(p)) differs from p")
	}
	// Expiry runs from the decoded deadlines.
	if q.Sweep(t0.Add(30*time.Second+500*time.Millisecond)) != 12 {
		t.Fatal("decoded locks did not expire")
	}
	empty := New(testConfig(), 7)
	if got := string(empty.Encode()); got != `{"v":1,"spso":7,"r":[]}` {
		t.Fatalf("empty: %s", got)
	}
}

func TestDecodeRefusals(t *testing.T) {
	for _, bad := range []string{
		``, `null`, `[]`, `{"v":2,"spso":0,"r":[]}`, `{"v":1,"r":[]}`, `{"v":1,"spso":-1,"r":[]}`,
		`{"v":1,"spso":0,"r":[[0,0,0]]}`, `{"v":1,"spso":0,"r":[[1,3,0]]}`, `{"v":1,"spso":0,"r":[[1,0,-1]]}`,
		`{"v":1,"spso":0,"r":[[1,0,40000]]}`, `{"v":1,"spso":0,"r":[[1,1,1]]}`, `{"v":1,"spso":0,"r":[[1,1,1,0,5]]}`,
		`{"v":1,"spso":0,"m":[""],"r":[[1,1,1,0,5]]}`, `{"v":1,"spso":0,"r":[[1,0,1,0]]}`, `{"v":1,"spso":0,"r":[[1,0]]}`,
		`{"v":1,"spso":0,"r":[[40001,0,0]]}`, `{"v":1,"spso":0,"r":[[30000,0,0],[30000,0,0]]}`,
		`{"v":1,"spso":9223372036854775807,"r":[[2,0,0]]}`, `{"v":1,"spso":0,"r":[[1.5,0,0]]}`,
	} {
		if _, err := Decode([]byte(bad), testConfig()); err == nil {
			t.Errorf("Decode(%s) accepted", bad)
		}
	}
}

// FuzzStateDecode: a row decodes whole or not at all, never panics, and a
// decoded state encodes to a row that decodes to the same state.
func FuzzStateDecode(f *testing.F) {
	f.Add(busyPartition().Encode())
	f.Add([]byte(`{"v":1,"spso":7,"r":[]}`))
	f.Add([]byte(`{"v":1,"spso":0,"m":["a"],"r":[[3,1,2,0,99],[1,0,4]]}`))
	f.Add([]byte(`{"v":1,"spso":0,"r":[[1,0,1],[1,0,1]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Decode(b, testConfig())
		if err != nil {
			if !strings.Contains(err.Error(), "malformed row") {
				t.Fatalf("error without errEncoding: %v", err)
			}
			return
		}
		e := p.Encode()
		q, err := Decode(e, testConfig())
		if err != nil {
			t.Fatalf("re-decode of %s: %v", e, err)
		}
		if !Equal(p, q) || !bytes.Equal(q.Encode(), e) {
			t.Fatalf("round trip differs: %s", e)
		}
	})
}
