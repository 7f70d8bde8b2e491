package coordinator

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// widths is a catalogue: topic → width; err makes it unreadable.
type widths struct {
	w     map[string]int32
	err   error
	asked []string
}

func (c *widths) Width(_ context.Context, topic string) (int32, bool, error) {
	c.asked = append(c.asked, topic)
	if c.err != nil {
		return 0, false, c.err
	}
	w, ok := c.w[topic]
	return w, ok, nil
}

// commitOf is a commit of offset 10+p for each (topic, partitions) pair.
func commitOf(group string, gen int32, topics ...any) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation = 6, group, gen
	for i := 0; i < len(topics); i += 2 {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = topics[i].(string)
		for _, p := range topics[i+1].([]int32) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, 10+int64(p)
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// TestCommitWritesOnlyServedPartitions: the client's Topics decides which
// partitions a commit may write. The others are UNKNOWN_TOPIC_OR_PARTITION
// and never reach the store, the rest is committed, and every partition is
// answered in request order.
func TestCommitWritesOnlyServedPartitions(t *testing.T) {
	h := newHarness(t, nil)
	cat := &widths{w: map[string]int32{"orders": 2}}
	h.cl.Topics = cat
	unknown := kerr.UnknownTopicOrPartition.Code
	codes := h.commit(commitOf("billing", -1, "gone", []int32{0}, "orders", []int32{1, 2, 0, -1}))
	if want := []int16{unknown, 0, unknown, 0, unknown}; !slices.Equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
	if want := []string{"gone", "orders"}; !slices.Equal(cat.asked, want) {
		t.Errorf("catalogue asked %v, want each topic once: %v", cat.asked, want)
	}
	for _, call := range h.kv.callsSince(0) {
		for _, op := range call {
			if op.Key == queen.GroupOffsetKey("billing", "gone", 0) || op.Key == queen.GroupOffsetKey("billing", "orders", 2) {
				t.Fatalf("a partition not served reached the store: %q", op.Key)
			}
		}
	}
	f := h.fetch("billing", "orders", 0, 1)
	if o0, o1 := f.Topics[0].Partitions[0].Offset, f.Topics[0].Partitions[1].Offset; o0 != 10 || o1 != 11 {
		t.Fatalf("stored offsets %d, %d; want 10, 11", o0, o1)
	}

	// A refusal of the member (a generation from a member the group does
	// not know) leaves the partitions not served as they were refused.
	codes = h.commit(commitOf("billing", 4, "gone", []int32{0}, "orders", []int32{0}))
	if want := []int16{unknown, kerr.UnknownMemberID.Code}; !slices.Equal(codes, want) {
		t.Fatalf("codes %v, want %v", codes, want)
	}
}

// TestCommitOfNothingServedTouchesNoGroup: when no partition is served the
// request is answered before the group is looked at, so even an invalid
// group id is answered per partition, and nothing is created or called.
func TestCommitOfNothingServedTouchesNoGroup(t *testing.T) {
	h := newHarness(t, nil)
	h.cl.Topics = &widths{w: map[string]int32{"orders": 1}}
	unknown := kerr.UnknownTopicOrPartition.Code
	for _, group := range []string{"billing", string(make([]byte, 300))} {
		codes := h.commit(commitOf(group, 3, "gone", []int32{0, 1}, "orders", []int32{5}))
		if want := []int16{unknown, unknown, unknown}; !slices.Equal(codes, want) {
			t.Fatalf("group %.10q: codes %v, want %v", group, codes, want)
		}
	}
	if n := h.kv.callCount(); n != 0 {
		t.Errorf("%d KV calls for a commit of nothing served", n)
	}
	if n := h.c.Groups(); n != 0 {
		t.Errorf("%d groups held after a commit of nothing served", n)
	}
}

// TestCommitWithUnreadableCatalogueRefusesNothing: a catalogue that cannot
// be read says nothing about what is served; the commit is written whole
// (and would meet Queen's failure in its own write, answered for it).
func TestCommitWithUnreadableCatalogueRefusesNothing(t *testing.T) {
	h := newHarness(t, nil)
	h.cl.Topics = &widths{err: errors.New("queen is down")}
	if codes := h.commit(commitOf("billing", -1, "gone", []int32{0}, "orders", []int32{0})); !slices.Equal(codes, []int16{0, 0}) {
		t.Fatalf("codes %v, want both written", codes)
	}
	if f := h.fetch("billing", "gone", 0); f.Topics[0].Partitions[0].Offset != 10 {
		t.Fatalf("stored %d, want 10", f.Topics[0].Partitions[0].Offset)
	}
}
