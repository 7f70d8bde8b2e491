package coordinator

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDeleteGroupsV3Messages: v3 names each failure's cause and leaves a
// success's message null; v2 carries none.
func TestDeleteGroupsV3Messages(t *testing.T) {
	h := newHarness(t, nil)
	h.commit(commitReq("gone", "", -1, "orders", map[int32]int64{0: 1}))
	h.stableSolo("busy")
	for _, v := range []int16{2, 3} {
		h.commit(commitReq("gone", "", -1, "orders", map[int32]int64{0: 1}))
		r := kmsg.NewPtrDeleteGroupsRequest()
		r.Version, r.Groups = v, []string{"gone", "never", "busy"}
		resp := h.c.DeleteGroups(context.Background(), h.cl, r)
		want := []*kerr.Error{nil, kerr.GroupIDNotFound, kerr.NonEmptyGroup}
		for i, g := range resp.Groups {
			code := int16(0)
			if want[i] != nil {
				code = want[i].Code
			}
			if g.ErrorCode != code {
				t.Fatalf("v%d %s: code %d, want %d", v, g.Group, g.ErrorCode, code)
			}
			switch {
			case v < 3 || want[i] == nil:
				if g.ErrorMessage != nil {
					t.Fatalf("v%d %s: message %q", v, g.Group, *g.ErrorMessage)
				}
			case g.ErrorMessage == nil || *g.ErrorMessage != want[i].Description:
				t.Fatalf("v%d %s: message %v, want %q", v, g.Group, g.ErrorMessage, want[i].Description)
			}
		}
	}
}
