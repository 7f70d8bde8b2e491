package queen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/queen-mq/queen-kafka/budget"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestAnswersBudgetHoldsWhatIsRead: an answer of answerHoldMin bytes or
// more takes its declared length from Config.Answers before it is read and
// gives it back once decoded, for every client derived with As; a short
// answer takes nothing; an answer the budget cannot hold waits, and a wait
// ends with the call's context, as a timeout.
func TestAnswersBudgetHoldsWhatIsRead(t *testing.T) {
	var list queen.QueueList
	for i := range 2000 {
		list.Queues = append(list.Queues, queen.QueueInfo{Name: fmt.Sprintf("queue-%04d-%s", i, strings.Repeat("x", 40)), Partitions: 1})
	}
	big, err := json.Marshal(list)
	require.NoError(t, err)
	require.Greater(t, len(big), queen.AnswerHoldMin)
	small := []byte(`{"queues":[]}`)
	answer := big
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(answer)))
		_, _ = w.Write(answer)
	}))
	defer srv.Close()

	const size = 1 << 20
	b := budget.New(size)
	c, err := queen.New(queen.Config{URL: srv.URL, Answers: b})
	require.NoError(t, err)
	qs, err := c.As("tenant-token", "").Queues(context.Background())
	require.NoError(t, err)
	require.Len(t, qs, 2000)
	require.Equal(t, int64(len(big)), b.Peak(), "the declared length, before reading")
	require.Equal(t, int64(size), b.Free(), "given back once decoded")

	answer = small
	b.ResetPeak()
	_, err = c.Queues(context.Background())
	require.NoError(t, err)
	require.Zero(t, b.Peak(), "a short answer takes nothing")

	answer = big
	require.NoError(t, b.Acquire(context.Background(), size-1000)) // another call holds nearly all
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = c.Queues(ctx)
	require.Equal(t, queen.KindTimeout, queen.KindOf(err), "%v", err)
}
