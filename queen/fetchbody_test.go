package queen

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestFetchBodyAsEncodingJSON: the fetch body's own renderer writes what
// encoding/json writes for plain names, and for any name a body that
// decodes to the same request.
func TestFetchBodyAsEncodingJSON(t *testing.T) {
	reqs := []FetchRequest{
		{Entries: []FetchEntry{{Queue: "orders", Partition: "3", Offset: 41, MaxBytes: 1 << 20}, {Queue: "orders", Partition: "9"}}, MaxWaitMs: 500, MinBytes: 1},
		{Entries: []FetchEntry{}},
		{},
		{Entries: []FetchEntry{{Queue: "q\"\\\n\x01<&>\u2028é", Partition: "Default", Offset: 1<<63 - 1, MaxBytes: -1}}, MaxWaitMs: -3, MinBytes: 1 << 40},
	}
	for i, r := range reqs {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(r))
		want := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
		got := r.appendJSON(nil)
		if i < 3 {
			require.Equal(t, string(want), string(got))
		}
		var a, b FetchRequest
		require.NoError(t, json.Unmarshal(want, &a))
		require.NoError(t, json.Unmarshal(got, &b), string(got))
		require.Equal(t, a, b)
	}
}
