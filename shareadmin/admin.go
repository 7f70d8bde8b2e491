package shareadmin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

// KV is the one Queen route the state needs; *queen.Client satisfies it.
type KV = queen.KVCaller

// Groups says whether group is a share group and whether it has no
// members (*sharegroup.Manager satisfies it).
type Groups interface {
	State(ctx context.Context, kv KV, group string) (exists, empty bool, err error)
}

// Topics is the caller's catalogue: a topic's id and width, a miss looked
// up afresh (catalogue.ServedTopics satisfies it).
type Topics interface {
	Served(ctx context.Context, topic string) (id [16]byte, width int32, exists bool, err error)
}

// Log is the partitions' high watermarks, for lag.
type Log interface {
	EndOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
}

// Caller is who sent a request: the credential its KV calls carry, its
// catalogue and its view of the log.
type Caller struct {
	KV     KV
	Topics Topics
	Log    Log
}

// Admin answers the three APIs for the groups this node coordinates.
type Admin struct {
	groups Groups
	own    ownership.Owners
}

// New is an Admin over groups, owning what own says this node owns.
func New(groups Groups, own ownership.Owners) *Admin { return &Admin{groups: groups, own: own} }

// groupError is a refusal of a whole group, with Kafka's message.
type groupError struct {
	code int16
	msg  string
}

func refusal(code int16) *groupError {
	msg := ""
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		msg = e.Description
	}
	return &groupError{code: code, msg: msg}
}

// admit refuses a write to group before anything is read: an empty id is
// INVALID_GROUP_ID, a group this node does not coordinate NOT_COORDINATOR.
func (a *Admin) admit(group string) *groupError {
	if group == "" {
		return refusal(kerr.InvalidGroupID.Code)
	}
	return a.owner(group)
}

// owner is nil when this node coordinates group, else the refusal.
func (a *Admin) owner(group string) *groupError {
	mine, err := ownership.Mine(a.own, group)
	switch {
	case err != nil:
		return refusal(kerr.CoordinatorNotAvailable.Code)
	case !mine:
		return refusal(kerr.NotCoordinator.Code)
	}
	return nil
}

// kvFault is a failed Queen call answered as the group APIs answer one.
func kvFault(err error) *groupError {
	var se *sharepartition.Error
	if errors.As(err, &se) {
		return &groupError{code: se.Code, msg: se.Message}
	}
	g := refusal(faults.GroupCode(err))
	if g.code == 0 {
		g = refusal(kerr.UnknownServerError.Code)
	}
	return g
}

// states is group's share-partition states, by topic and partition.
func states(ctx context.Context, kv KV, group string) (map[string]map[int32]sharepartition.Summary, error) {
	sums, err := sharepartition.Describe(ctx, kv, group)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]sharepartition.Summary{}
	for _, s := range sums {
		if out[s.Topic] == nil {
			out[s.Topic] = map[int32]sharepartition.Summary{}
		}
		out[s.Topic][s.Partition] = s
	}
	return out, nil
}

// emptyGroup checks what Alter and Delete require: group is a share group
// (or may become one: mustExist false) with no members. A group with
// share-partition state exists even when no member ever joined it.
func (a *Admin) emptyGroup(ctx context.Context, kv KV, group string, mustExist bool, hasState bool) *groupError {
	exists, empty, err := a.groups.State(ctx, kv, group)
	if err != nil {
		return kvFault(err)
	}
	if !exists && !hasState && mustExist {
		return refusal(kerr.GroupIDNotFound.Code)
	}
	if exists && !empty {
		return refusal(kerr.NonEmptyGroup.Code)
	}
	return nil
}

// Describe answers DescribeShareGroupOffsets: per group, the start offset
// of every partition asked (-1 where the group has no state for it, or
// the topic does not exist), or with no topics every partition the group
// has state for; from v1 the lag of each partition with state.
func (a *Admin) Describe(ctx context.Context, cl Caller, req *kmsg.DescribeShareGroupOffsetsRequest) *kmsg.DescribeShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range req.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID = g.GroupID
		if ge := a.describeGroup(ctx, cl, req.Version, g, &rg); ge != nil {
			rg.Topics, rg.ErrorCode, rg.ErrorMessage = nil, ge.code, &ge.msg
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

func (a *Admin) describeGroup(ctx context.Context, cl Caller, version int16, g kmsg.DescribeShareGroupOffsetsRequestGroup, rg *kmsg.DescribeShareGroupOffsetsResponseGroup) *groupError {
	if ge := a.owner(g.GroupID); ge != nil {
		return ge
	}
	st, err := states(ctx, cl.KV, g.GroupID)
	if err != nil {
		return kvFault(err)
	}
	asked := g.Topics
	if asked == nil {
		// Every partition with state, of the topics that still exist.
		for _, topic := range slices.Sorted(maps.Keys(st)) {
			t := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			t.Topic = topic
			for p := range st[topic] {
				t.Partitions = append(t.Partitions, p)
			}
			slices.Sort(t.Partitions)
			asked = append(asked, t)
		}
	}
	for _, t := range asked {
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		id, _, exists, err := cl.Topics.Served(ctx, t.Topic)
		if err != nil {
			return kvFault(err)
		}
		if !exists && g.Topics == nil {
			continue // Kafka lists only the topics its metadata still holds
		}
		if exists {
			rt.TopicID = id
		}
		var withState []int32
		for _, p := range t.Partitions {
			if _, ok := st[t.Topic][p]; ok && exists {
				withState = append(withState, p)
			}
		}
		var ends map[int32]int64
		var endErr error
		if version >= 1 && len(withState) > 0 && cl.Log != nil {
			ends, endErr = cl.Log.EndOffsets(ctx, t.Topic, withState)
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch = p, -1, -1
			if s, ok := st[t.Topic][p]; ok && exists {
				rp.StartOffset = s.SPSO
				if version >= 1 {
					if endErr != nil {
						ge := kvFault(endErr)
						rp.ErrorCode, rp.ErrorMessage = ge.code, &ge.msg
					} else if end, ok := ends[p]; ok {
						rp.Lag = end - s.SPSO - s.DeliveryComplete // Kafka's formula, unclamped
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return nil
}

// Alter answers AlterShareGroupOffsets: the start offsets of an empty (or
// new) share group's partitions are set, dropping their in-flight records;
// a topic or partition that does not exist is refused
// UNKNOWN_TOPIC_OR_PARTITION, a negative offset INVALID_REQUEST, each on
// its own; a group with members is NON_EMPTY_GROUP.
func (a *Admin) Alter(ctx context.Context, cl Caller, req *kmsg.AlterShareGroupOffsetsRequest) *kmsg.AlterShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	fail := func(ge *groupError) *kmsg.AlterShareGroupOffsetsResponse {
		resp.Topics, resp.ErrorCode, resp.ErrorMessage = nil, ge.code, &ge.msg
		return resp
	}
	if ge := a.admit(req.GroupID); ge != nil {
		return fail(ge)
	}
	if req.Topics == nil {
		return resp
	}
	if ge := a.emptyGroup(ctx, cl.KV, req.GroupID, false, false); ge != nil {
		return fail(ge)
	}
	offsets := map[sharepartition.Key]int64{}
	for _, t := range req.Topics {
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		id, width, exists, err := cl.Topics.Served(ctx, t.Topic)
		if err != nil {
			return fail(kvFault(err))
		}
		rt.TopicID = id
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case !exists || p.Partition < 0 || p.Partition >= width:
				ge := refusal(kerr.UnknownTopicOrPartition.Code)
				rp.ErrorCode, rp.ErrorMessage = ge.code, &ge.msg
			case p.StartOffset < 0:
				msg := fmt.Sprintf("Start offset %d of %s-%d is negative.", p.StartOffset, t.Topic, p.Partition)
				rp.ErrorCode, rp.ErrorMessage = kerr.InvalidRequest.Code, &msg
			default:
				offsets[sharepartition.Key{Group: req.GroupID, Topic: t.Topic, Partition: p.Partition}] = p.StartOffset
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if err := sharepartition.Alter(ctx, cl.KV, offsets); err != nil {
		// The partitions it would have set (those not refused above).
		ge := kvFault(err)
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if rp := &resp.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode, rp.ErrorMessage = ge.code, &ge.msg
				}
			}
		}
	}
	return resp
}

// Delete answers DeleteShareGroupOffsets: an empty share group's state for
// each topic named is deleted (the next fetch starts the partitions afresh
// from share.auto.offset.reset); a topic that does not exist is
// UNKNOWN_TOPIC_OR_PARTITION; a group with no state and no members is
// GROUP_ID_NOT_FOUND, one with members NON_EMPTY_GROUP.
func (a *Admin) Delete(ctx context.Context, cl Caller, req *kmsg.DeleteShareGroupOffsetsRequest) *kmsg.DeleteShareGroupOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	fail := func(ge *groupError) *kmsg.DeleteShareGroupOffsetsResponse {
		resp.Topics, resp.ErrorCode, resp.ErrorMessage = nil, ge.code, &ge.msg
		return resp
	}
	if ge := a.admit(req.GroupID); ge != nil {
		return fail(ge)
	}
	if req.Topics == nil {
		return resp
	}
	st, err := states(ctx, cl.KV, req.GroupID)
	if err != nil {
		return fail(kvFault(err))
	}
	if ge := a.emptyGroup(ctx, cl.KV, req.GroupID, true, len(st) > 0); ge != nil {
		return fail(ge)
	}
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		id, _, exists, err := cl.Topics.Served(ctx, t.Topic)
		if err != nil {
			return fail(kvFault(err))
		}
		if !exists {
			ge := refusal(kerr.UnknownTopicOrPartition.Code)
			rt.ErrorCode, rt.ErrorMessage = ge.code, &ge.msg
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		rt.TopicID = id
		var keys []sharepartition.Key
		for p := range st[t.Topic] {
			keys = append(keys, sharepartition.Key{Group: req.GroupID, Topic: t.Topic, Partition: p})
		}
		if err := sharepartition.Delete(ctx, cl.KV, keys); err != nil {
			ge := kvFault(err)
			rt.ErrorCode, rt.ErrorMessage = ge.code, &ge.msg
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
