package queen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// gate is a Budget of size bytes that records what it gave.
type gate struct {
	mu         sync.Mutex
	free, size int64
	taken      []int64
	changed    chan struct{}
}

func newGate(size int64) *gate { return &gate{free: size, size: size, changed: make(chan struct{})} }

func (g *gate) Acquire(ctx context.Context, n int64) error {
	for {
		g.mu.Lock()
		if n <= g.free {
			g.free -= n
			g.taken = append(g.taken, n)
			g.mu.Unlock()
			return nil
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *gate) Release(n int64) {
	g.mu.Lock()
	g.free += n
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

func (g *gate) held() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.size - g.free
}

// TestAnswersBudgetHoldsWhatIsRead: an answer of answerHoldMin bytes or
// more takes its declared length from Config.Answers before it is read and
// gives it back once decoded, for every client derived with As; a short
// answer takes nothing; an answer the budget cannot hold waits, and a wait
// ends with the call's context, as a timeout.
func TestAnswersBudgetHoldsWhatIsRead(t *testing.T) {
	var list QueueList
	for i := range 2000 {
		list.Queues = append(list.Queues, QueueInfo{Name: fmt.Sprintf("queue-%04d-%s", i, strings.Repeat("x", 40)), Partitions: 1})
	}
	big, err := json.Marshal(list)
	require.NoError(t, err)
	require.Greater(t, len(big), answerHoldMin)
	small := []byte(`{"queues":[]}`)
	answer := big
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = w.Write(answer)
	}))
	defer srv.Close()

	g := newGate(1 << 20)
	c, err := New(Config{URL: srv.URL, Answers: g})
	require.NoError(t, err)
	qs, err := c.As("tenant-token", "").Queues(context.Background())
	require.NoError(t, err)
	require.Len(t, qs, 2000)
	require.Equal(t, []int64{int64(len(big))}, g.taken, "the declared length, before reading")
	require.Zero(t, g.held(), "given back once decoded")

	answer = small
	_, err = c.Queues(context.Background())
	require.NoError(t, err)
	require.Len(t, g.taken, 1, "a short answer takes nothing")

	answer = big
	require.NoError(t, g.Acquire(context.Background(), 1<<20-1000)) // another call holds nearly all
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Queues(ctx)
	require.Equal(t, KindTimeout, KindOf(err), "%v", err)
}
