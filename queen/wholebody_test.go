package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// writeSizes is a connection that records the size of every Write.
type writeSizes struct {
	net.Conn
	mu    *sync.Mutex
	sizes *[]int
}

func (w writeSizes) Write(p []byte) (int, error) {
	w.mu.Lock()
	*w.sizes = append(*w.sizes, len(p))
	w.mu.Unlock()
	return w.Conn.Write(p)
}

// TestPushBodyWrittenWhole: a push body reaches the socket in one Write
// (less what the transport's write buffer took along with the headers),
// not in 32 KiB copies, and arrives byte for byte.
func TestPushBodyWrittenWhole(t *testing.T) {
	const n = 300
	items := make([]PushItem, n)
	value := strings.Repeat("A", 4000)
	for i := range items {
		items[i] = PushItem{Queue: "q", Partition: "0", Payload: json.RawMessage(fmt.Sprintf(`{"k":null,"v":"%s"}`, value))}
	}
	var ok strings.Builder
	ok.WriteString("[")
	for i := range n {
		if i > 0 {
			ok.WriteString(",")
		}
		fmt.Fprintf(&ok, `{"index":%d,"message_id":"m","transaction_id":"m","queueName":"q","status":"queued","offset":%d}`, i, i)
	}
	ok.WriteString("]")
	f := newFake(t, answer(201, ok.String()))
	c := f.client(t, "")
	var mu sync.Mutex
	var sizes []int
	var d net.Dialer
	c.hc.Transport.(*http.Transport).DialContext = wholeBodyDialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := d.DialContext(ctx, network, addr)
		return writeSizes{Conn: nc, mu: &mu, sizes: &sizes}, err
	})
	if _, err := c.Push(bg, items); err != nil {
		t.Fatal(err)
	}
	want := string(pushBody(items).body) + "]}"
	if got := f.last(t).Body; got != want {
		t.Fatalf("push body differs: %d bytes, want %d", len(got), len(want))
	}
	mu.Lock()
	defer mu.Unlock()
	total, largest := 0, 0
	for _, s := range sizes {
		total += s
		largest = max(largest, s)
	}
	if len(sizes) > 3 || largest < len(want)-8<<10 || total < len(want) {
		t.Fatalf("body of %d bytes written as %d writes %v, want the body in one", len(want), len(sizes), sizes)
	}
}
