package coordinator

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit and OffsetFetch requests that name topics by id: committed
// offsets are keyed by topic name (§10), so the node resolves each id to
// its name through the catalogue before the coordinator sees the request,
// and names the answer's topics by id again.
// An id no topic has is UNKNOWN_TOPIC_ID on each of its partitions; a
// catalogue that cannot be read is the group APIs' Queen code.

// TopicIDs is the caller's catalogue naming topics by id
// (catalogue.ServedTopics satisfies it).
type TopicIDs interface {
	// ResolveID is the name of the topic with id; ok false when none has
	// it; an error when the catalogue cannot be read.
	ResolveID(ctx context.Context, id [16]byte) (name string, ok bool, err error)
	// IDOf is topic's id, from the catalogue as read (once) now.
	IDOf(ctx context.Context, topic string) ([16]byte, bool)
}

// idTopics resolves ids, in order: the name of each ("" when it has none)
// and the code its partitions are answered instead (0 when resolved).
func idTopics(ctx context.Context, cl Client, ids [][16]byte) ([]string, []int16) {
	names, codes := make([]string, len(ids)), make([]int16, len(ids))
	for i, id := range ids {
		name, ok, err := cl.IDs.ResolveID(ctx, id)
		switch {
		case err != nil:
			codes[i] = QueenCode(err)
		case !ok:
			codes[i] = kerr.UnknownTopicID.Code
		default:
			names[i] = name
		}
	}
	return names, codes
}

// OffsetCommitByID answers an OffsetCommit v10 through the name-keyed
// OffsetCommit, cl.IDs naming the topics.
func (c *Coordinator) OffsetCommitByID(ctx context.Context, cl Client, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	ids := make([][16]byte, len(req.Topics))
	for i, t := range req.Topics {
		ids[i] = t.TopicID
	}
	names, codes := idTopics(ctx, cl, ids)
	for i := range req.Topics {
		req.Topics[i].Topic = names[i] // "" is never served, so never written
	}
	resp := c.OffsetCommit(ctx, cl, req)
	for i := range resp.Topics {
		resp.Topics[i].TopicID = ids[i]
		if codes[i] != 0 {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = codes[i]
			}
		}
	}
	return resp
}

// OffsetFetchByID answers an OffsetFetch v10 through the name-keyed
// OffsetFetch, cl.IDs naming the topics. A group asking for every topic is answered the committed
// topics that have an id in the catalogue; one without (a queue deleted
// natively, or not yet listed) cannot be named in a v10 answer.
func (c *Coordinator) OffsetFetchByID(ctx context.Context, cl Client, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	// The request keeps its ids (only names are filled in), so the answer
	// is named from them; only the codes of unresolved ids are kept.
	codes := make([][]int16, len(req.Groups))
	for gi := range req.Groups {
		g := &req.Groups[gi]
		gids := make([][16]byte, len(g.Topics))
		for ti, t := range g.Topics {
			gids[ti] = t.TopicID
		}
		var names []string
		names, codes[gi] = idTopics(ctx, cl, gids)
		for ti := range g.Topics {
			g.Topics[ti].Topic = names[ti]
		}
	}
	resp := c.OffsetFetch(ctx, cl, req)
	for gi := range resp.Groups {
		g := &resp.Groups[gi]
		if gi < len(req.Groups) && req.Groups[gi].Topics == nil {
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				if id, ok := cl.IDs.IDOf(ctx, t.Topic); ok {
					t.TopicID, t.Topic = id, ""
					kept = append(kept, t)
				}
			}
			g.Topics = kept
			continue
		}
		for ti := range g.Topics {
			g.Topics[ti].TopicID, g.Topics[ti].Topic = req.Groups[gi].Topics[ti].TopicID, ""
			if code := codes[gi][ti]; code != 0 {
				for pi := range g.Topics[ti].Partitions {
					p := &g.Topics[ti].Partitions[pi]
					p.ErrorCode, p.Offset = code, -1
				}
			}
		}
	}
	return resp
}
