package coordinator

import (
	"context"
	"hash/fnv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/ownership"
)

// keyedOwnership owns each key by a hash of it over three brokers, so a
// batch of keys spreads over owners the way a ring does; "down" keys
// cannot be placed.
type keyedOwnership struct{ self ownership.Broker }

var threeBrokers = []ownership.Broker{{NodeID: 1, Host: "n1", Port: 9091}, {NodeID: 2, Host: "n2", Port: 9092}, {NodeID: 3, Host: "n3", Port: 9093}}

func (keyedOwnership) Owner(key string) (ownership.Broker, error) {
	if strings.HasPrefix(key, "down") {
		return ownership.Broker{}, ownership.ErrNoOwner
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return threeBrokers[h.Sum32()%3], nil
}

// Redirect names node 3 for a key "down-aside…" (a node set aside that
// knows its peers), nothing for any other.
func (keyedOwnership) Redirect(key string) (ownership.Broker, bool) {
	if strings.HasPrefix(key, "down-aside") {
		return threeBrokers[2], true
	}
	return ownership.Broker{}, false
}

func (o keyedOwnership) Self() ownership.Broker { return o.self }

func findReq(version int16, typ int8, keys ...string) *kmsg.FindCoordinatorRequest {
	r := kmsg.NewPtrFindCoordinatorRequest()
	r.Version, r.CoordinatorType = version, typ
	if version <= 3 {
		r.CoordinatorKey = keys[0]
	} else {
		r.CoordinatorKeys = keys
	}
	return r
}

// TestFindCoordinatorBatched: v4+ answers every key of the batch, in
// order, each with its own owner or its own error; v0-3 answer the single
// key in the top-level fields.
func TestFindCoordinatorBatched(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ownership = keyedOwnership{self: threeBrokers[0]} })
	ctx := context.Background()
	keys := []string{"g-0", "g-1", "g-2", "g-3", "g-4", "g-5", "down-1", strings.Repeat("x", 256), ""}
	for _, v := range []int16{4, 5, 6} {
		for _, typ := range []int8{0, 1} {
			resp := h.c.FindCoordinator(ctx, h.cl, findReq(v, typ, keys...))
			if len(resp.Coordinators) != len(keys) {
				t.Fatalf("v%d type %d: %d answers for %d keys", v, typ, len(resp.Coordinators), len(keys))
			}
			owners := map[int32]bool{}
			for i, a := range resp.Coordinators {
				if a.Key != keys[i] {
					t.Fatalf("v%d answer %d is for %q, want %q", v, i, a.Key, keys[i])
				}
				want, werr := keyedOwnership{}.Owner(keys[i])
				switch {
				case werr != nil:
					if a.ErrorCode != kerr.CoordinatorNotAvailable.Code || a.NodeID != -1 || a.Port != -1 {
						t.Fatalf("v%d unplaceable key: %+v", v, a)
					}
				case typ == 0 && len(keys[i]) > 255:
					if a.ErrorCode != kerr.InvalidGroupID.Code || a.NodeID != -1 {
						t.Fatalf("v%d long group id: %+v", v, a)
					}
				default:
					if a.ErrorCode != 0 || a.ErrorMessage != nil || a.NodeID != want.NodeID || a.Host != want.Host || a.Port != want.Port {
						t.Fatalf("v%d type %d key %q: %+v, want %+v", v, typ, keys[i], a, want)
					}
					owners[a.NodeID] = true
				}
			}
			if len(owners) < 2 {
				t.Fatalf("six keys all owned by %v: the batch was not answered per key", owners)
			}
		}
	}
	// The single-key versions carry the answer at the top level.
	for v := int16(0); v <= 3; v++ {
		resp := h.c.FindCoordinator(ctx, h.cl, findReq(v, 0, "g-2"))
		want, _ := keyedOwnership{}.Owner("g-2")
		if resp.ErrorCode != 0 || resp.NodeID != want.NodeID || resp.Host != want.Host || resp.Port != want.Port || len(resp.Coordinators) != 0 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		resp = h.c.FindCoordinator(ctx, h.cl, findReq(v, 0, "down-2"))
		if resp.ErrorCode != kerr.CoordinatorNotAvailable.Code || resp.NodeID != -1 {
			t.Fatalf("v%d unplaceable: %+v", v, resp)
		}
	}
}

// TestFindCoordinatorRedirectsWhileOwnersAreUnknown: a key whose owner this
// node cannot name is answered the Ownership's redirect when it has one (a
// peer, for a node whose registry heartbeat fails), at every version and
// for either key type, and COORDINATOR_NOT_AVAILABLE when it has none.
func TestFindCoordinatorRedirectsWhileOwnersAreUnknown(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Ownership = keyedOwnership{self: threeBrokers[0]} })
	ctx := context.Background()
	want := threeBrokers[2]
	for v := int16(0); v <= 6; v++ {
		for _, typ := range []int8{0, 1} {
			resp := h.c.FindCoordinator(ctx, h.cl, findReq(v, typ, "down-aside-1", "down-3"))
			got, none := kmsg.FindCoordinatorResponseCoordinator{ErrorCode: resp.ErrorCode, NodeID: resp.NodeID, Host: resp.Host, Port: resp.Port}, resp.ErrorCode
			if v >= 4 {
				got, none = resp.Coordinators[0], resp.Coordinators[1].ErrorCode
			}
			if got.ErrorCode != 0 || got.NodeID != want.NodeID || got.Host != want.Host || got.Port != want.Port {
				t.Fatalf("v%d type %d: redirect answered %+v, want %+v", v, typ, got, want)
			}
			if v >= 4 && none != kerr.CoordinatorNotAvailable.Code {
				t.Fatalf("v%d type %d: a key with no redirect answered %d", v, typ, none)
			}
		}
	}
}

// TestFindCoordinatorRefusesUnservedKeyTypes: a share-group key (type 2,
// v6) and any unknown type are INVALID_REQUEST per key, as Kafka answers
// without a share coordinator; the batch's other answers are unaffected by
// construction (one type per request).
func TestFindCoordinatorRefusesUnservedKeyTypes(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	for _, c := range []struct {
		v   int16
		typ int8
	}{{6, 2}, {5, 2}, {4, 3}, {6, -1}} {
		resp := h.c.FindCoordinator(ctx, h.cl, findReq(c.v, c.typ, "grp:topic:0", "other"))
		if len(resp.Coordinators) != 2 {
			t.Fatalf("v%d type %d: %+v", c.v, c.typ, resp)
		}
		for _, a := range resp.Coordinators {
			if a.ErrorCode != kerr.InvalidRequest.Code || a.NodeID != -1 || a.Port != -1 || a.ErrorMessage == nil {
				t.Fatalf("v%d type %d key %q: %+v", c.v, c.typ, a.Key, a)
			}
		}
	}
	// An empty batch is an empty answer.
	if resp := h.c.FindCoordinator(ctx, h.cl, findReq(4, 0)); resp.ErrorCode != 0 || len(resp.Coordinators) != 0 {
		t.Fatalf("empty batch: %+v", resp)
	}
}
