package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

// writeSizes is a connection that records the size and the memory of
// every Write. It is no socket, so a vectored write reaches it as one
// Write per segment.
type writeSizes struct {
	net.Conn
	mu    *sync.Mutex
	sizes *[]int
	at    *[]*byte
}

func (w writeSizes) Write(p []byte) (int, error) {
	w.mu.Lock()
	*w.sizes = append(*w.sizes, len(p))
	*w.at = append(*w.at, unsafe.SliceData(p))
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// pushAnswer is a canonical answer queuing n items at offsets 0…n-1.
func pushAnswer(n int) string {
	var ok strings.Builder
	ok.WriteString("[")
	for i := range n {
		if i > 0 {
			ok.WriteString(",")
		}
		fmt.Fprintf(&ok, `{"index":%d,"message_id":"m","transaction_id":"m","queueName":"q","status":"queued","offset":%d}`, i, i)
	}
	ok.WriteString("]")
	return ok.String()
}

// recordWrites points c's transport at connections recording their writes.
func recordWrites(c *Client) (*sync.Mutex, *[]int, *[]*byte) {
	var mu sync.Mutex
	var sizes []int
	var at []*byte
	var d net.Dialer
	c.hc.Transport.(*http.Transport).DialContext = wholeBodyDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		return writeSizes{Conn: nc, mu: &mu, sizes: &sizes, at: &at}, err
	})
	return &mu, &sizes, &at
}

// rendered is the body of items as encoding/json reads it back, for
// comparison.
func rendered(t *testing.T, items []PushItem) string {
	t.Helper()
	b, err := encodeBody(PushRequest{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

// TestPushBodyWrittenWhole: a push body of copied payloads reaches the
// socket in one Write (less what the transport's write buffer took along
// with the headers), not in 32 KiB copies, and arrives byte for byte.
func TestPushBodyWrittenWhole(t *testing.T) {
	const n = 3000
	items := make([]PushItem, n)
	value := strings.Repeat("A", minRefPayload/2)
	for i := range items {
		items[i] = PushItem{Queue: "q", Partition: "0", Payload: json.RawMessage(fmt.Sprintf(`{"k":null,"v":"%s"}`, value))}
	}
	f := newFake(t, answer(201, pushAnswer(n)))
	c := f.client(t, "")
	mu, sizes, _ := recordWrites(c)
	if _, err := c.Push(bg, items); err != nil {
		t.Fatal(err)
	}
	want := rendered(t, items)
	if got := f.last(t).Body; got != want {
		t.Fatalf("push body differs: %d bytes, want %d", len(got), len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	total, largest := 0, 0
	for _, s := range *sizes {
		total += s
		largest = max(largest, s)
	}
	if len(*sizes) > 3 || largest < len(want)-8<<10 || total < len(want) {
		t.Fatalf("body of %d bytes written as %d writes %v, want the body in one", len(want), len(*sizes), *sizes)
	}
}

// TestPushPayloadsWrittenInPlace: a payload of minRefPayload bytes or more
// is written from the caller's memory (no copy into the body), the body
// arriving byte for byte, and the call returns with the body closed.
func TestPushPayloadsWrittenInPlace(t *testing.T) {
	const n = 400
	items := make([]PushItem, n)
	for i := range items {
		v := strings.Repeat(string(rune('a'+i%26)), minRefPayload+i)
		items[i] = PushItem{Queue: "q", Partition: "1", Payload: json.RawMessage(fmt.Sprintf(`{"k":null,"v":"%s"}`, v)), TransactionID: fmt.Sprintf("kafka:1:0:%d", i)}
	}
	f := newFake(t, answer(201, pushAnswer(n)))
	c := f.client(t, "")
	mu, _, at := recordWrites(c)
	if _, err := c.Push(bg, items); err != nil {
		t.Fatal(err)
	}
	if got, want := f.last(t).Body, rendered(t, items); got != want {
		t.Fatalf("push body differs: %d bytes, want %d", len(got), len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	written := make(map[*byte]bool, len(*at))
	for _, p := range *at {
		written[p] = true
	}
	inPlace := 0
	for i := range items {
		if written[unsafe.SliceData(items[i].Payload)] {
			inPlace++
		}
	}
	// The first payloads may have gone through the transport's write
	// buffer with the headers (its first 4 KiB).
	if inPlace < n-4 {
		t.Fatalf("%d of %d payloads written from their own memory", inPlace, n)
	}
}

// TestPooledReaderSegments: the body reader gives the segments' bytes in
// order through any mix of short reads and WriteTo, and counts what is left.
func TestPooledReaderSegments(t *testing.T) {
	b := NewPushBatch(0)
	var want bytes.Buffer
	want.WriteString(`{"items":[`)
	for i := range 50 {
		p := []byte(`"` + strings.Repeat("x", i*20) + `"`)
		b.Add("q", "", p, "")
		if i > 0 {
			want.WriteString(",")
		}
		fmt.Fprintf(&want, `{"queue":"q","payload":%s}`, p)
	}
	want.WriteString("]}")
	body := &pooledBody{buf: append(b.body, "]}"...), refs: b.refs}
	if body.size() != int64(want.Len()) {
		t.Fatalf("size %d, want %d", body.size(), want.Len())
	}
	for _, step := range []int{1, 7, 300, 5000} {
		r := body.reader().(*pooledReader)
		var got bytes.Buffer
		buf := make([]byte, step)
		for got.Len() < want.Len()/2 {
			m, err := r.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			got.Write(buf[:m])
		}
		if r.left != int64(want.Len()-got.Len()) {
			t.Fatalf("step %d: left %d after %d of %d", step, r.left, got.Len(), want.Len())
		}
		if _, err := r.WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if m, err := r.Read(buf); m != 0 || err != io.EOF {
			t.Fatalf("step %d: read past the end: %d %v", step, m, err)
		}
		if got.String() != want.String() || r.left != 0 {
			t.Fatalf("step %d: body differs\n got %s\nwant %s", step, got.String(), want.String())
		}
		_ = r.Close()
	}
	body.release()
}

// TestItemBodyBytes: each Add grows the rendered body by ItemBodyBytes
// (the first by one less: no comma), payloads from minRefPayload up not
// copied into it, so the sum sizes NewPushBatch's hint.
func TestItemBodyBytes(t *testing.T) {
	b := NewPushBatch(0)
	start := b.Size()
	for i := range 400 {
		n := i * 3
		payload := []byte(`"` + strings.Repeat("p", max(n-2, 0)) + `"`)[:min(n, max(n-2, 0)+2)]
		part, key := "", ""
		if i%2 == 0 {
			part = fmt.Sprint(i % 7)
		}
		if i%3 == 0 {
			key = fmt.Sprintf("kafka:%d:0:%d", i, i*100)
		}
		want := ItemBodyBytes("topic-q", part, len(payload), key)
		if i == 0 {
			want--
		}
		b.Add("topic-q", part, payload, key)
		if got := b.Size() - start; got != want {
			t.Fatalf("item %d (payload %d bytes): body grew %d, ItemBodyBytes says %d", i, len(payload), got, want)
		}
		start = b.Size()
	}
	if got := ItemBodyBytes("q", "0", 1400, "kafka:1:0:1"); got > 100 {
		t.Fatalf("an item of a 1,400-byte payload sent in place renders %d bytes of body", got)
	}
}
