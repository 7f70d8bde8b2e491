package producepush

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
)

// TestPushBodyHintIsWhatIsRendered: a push's buffer is sized by the bytes
// its items render into it, not by their envelopes, which are sent from
// their own memory. Sized by the envelopes, one producer's 1 KiB records
// took push buffers ten times what they held (issue 20: 15-19 MB of the
// facade's 55 MB heap under the produce benchmark).
func TestPushBodyHintIsWhatIsRendered(t *testing.T) {
	value := bytes.Repeat([]byte("v"), 1024)
	var env []byte
	var ends []int
	var parts []*Part
	for pi := range 6 {
		p := &Part{Topic: "bench-topic", Partition: int32(pi)}
		from := len(ends)
		start := len(env)
		for r := range 100 + pi {
			env = envelope.Append(env, &envelope.Record{Key: []byte(fmt.Sprint(r)), Value: value[:min(r*10, len(value))], Timestamp: 1})
			ends = append(ends, len(env)-start)
		}
		p.Items = [2]int{from, len(ends)}
		if pi%2 == 0 {
			for i := p.Items[0]; i < p.Items[1]; i++ {
				p.Keys = append(p.Keys, fmt.Sprintf("kafka:123:0:%d", i))
			}
		}
		parts = append(parts, p)
	}
	// Each part's envelopes start its own slice, as package node's
	// encodeParts leaves them.
	at := 0
	for _, p := range parts {
		n := ends[p.Items[1]-1]
		p.Env = env[at : at+n]
		at += n
	}
	hint := pushBodyHint(parts, ends)
	push := queen.NewPushBatch(hint)
	base := push.Size()
	addParts(push, parts, ends)
	rendered := push.Size() - base
	if hint < rendered || hint > rendered+len(parts) {
		t.Fatalf("hint %d bytes for a body of %d rendered (%d bytes of envelopes)", hint, rendered, len(env))
	}
	for i, p := range parts {
		if want := p.Items[1] - p.Items[0]; p.pushed[1]-p.pushed[0] != want || (i > 0 && p.pushed[0] != parts[i-1].pushed[1]) {
			t.Fatalf("part %d pushed as items %v, want %d after the previous part's", i, p.pushed, want)
		}
	}
}
