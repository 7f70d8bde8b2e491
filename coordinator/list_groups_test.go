package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestListGroupsTypes: v5 answers every group as "classic"; a types filter
// naming classic (in any case) lists them, one naming only other types
// lists none; states match trimmed and case-insensitively, as Kafka's do.
func TestListGroupsTypes(t *testing.T) {
	h := newHarness(t, nil)
	h.commit(commitReq("old", "", -1, "orders", map[int32]int64{0: 1}))
	h.c = New(h.c.cfg) // "old" is now known only to the index
	h.stableSolo("live")
	list := func(v int16, types, states []string) []kmsg.ListGroupsResponseGroup {
		r := kmsg.NewPtrListGroupsRequest()
		r.Version, r.TypesFilter, r.StatesFilter = v, types, states
		resp := h.c.ListGroups(context.Background(), h.cl, r)
		if resp.ErrorCode != 0 {
			t.Fatalf("list %d", resp.ErrorCode)
		}
		return resp.Groups
	}
	all := list(5, nil, nil)
	if len(all) != 2 {
		t.Fatalf("list %+v", all)
	}
	for _, g := range all {
		if g.GroupType != "classic" {
			t.Fatalf("group %s has type %q", g.Group, g.GroupType)
		}
	}
	if got := list(5, []string{"CLASSIC"}, nil); len(got) != 2 {
		t.Fatalf("classic filter %+v", got)
	}
	if got := list(5, []string{"consumer", "share"}, nil); len(got) != 0 {
		t.Fatalf("non-classic filter %+v", got)
	}
	if got := list(5, []string{"consumer", "classic"}, []string{" stable "}); len(got) != 1 || got[0].Group != "live" {
		t.Fatalf("classic and stable %+v", got)
	}
	if got := list(5, []string{"bogus"}, []string{"Empty"}); len(got) != 0 {
		t.Fatalf("an unknown type matches nothing, as Kafka's UNKNOWN: %+v", got)
	}
}
