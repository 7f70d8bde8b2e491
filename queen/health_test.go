package queen

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

type countObserver struct{ calls int }

func (c *countObserver) QueenCall(string, Kind, time.Duration) { c.calls++ }

// TestHealthVerdicts: a failure for want of Queen is kept until Queen
// answers again (any answer, a 4xx included); a canceled call changes
// nothing; every call reaches Next.
func TestHealthVerdicts(t *testing.T) {
	next := &countObserver{}
	h := &Health{Next: next}
	require.Nil(t, h.Failed())
	require.False(t, h.Answered(), "nothing answered at boot")

	h.QueenCall("push", KindTransport, 0)
	require.Equal(t, "push", h.Failed().Route)
	require.Equal(t, KindTransport, h.Failed().Kind)
	require.False(t, h.Answered())

	h.QueenCall("kv", KindCanceled, 0)
	require.Equal(t, "push", h.Failed().Route, "a canceled call says nothing of Queen")

	h.QueenCall("kv", KindUnauthorized, 0)
	require.Nil(t, h.Failed(), "a 401 is Queen answering")
	require.True(t, h.Answered())

	h.QueenCall("fetch", KindServer, 0)
	require.Equal(t, "fetch", h.Failed().Route)
	require.True(t, h.Answered(), "answered once stays answered")
	require.Equal(t, 4, next.calls)
}
