package sharegroup

import (
	"context"
	"encoding/json"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

// Describe answers a ShareGroupDescribe v0-1 (Kafka's
// ShareGroup.asDescribedGroup): the group epoch, the assignment epoch,
// the assignor "simple", and every member with its subscription and its
// assignment. A group id no share group has is GROUP_ID_NOT_FOUND.
func (m *Manager) Describe(ctx context.Context, cl Client, req *kmsg.ShareGroupDescribeRequest) *kmsg.ShareGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, id := range req.GroupIDs {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID = id
		d.AuthorizedOperations = authz.NotAsked // "omitted": the node sets it when asked
		if e := m.describe(ctx, cl, id, &d); e != nil {
			d.ErrorCode, d.ErrorMessage, d.GroupState = e.Code, e.Message(), StateDead
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func (m *Manager) describe(ctx context.Context, cl Client, id string, d *kmsg.ShareGroupDescribeResponseGroup) *hbError {
	if strings.TrimSpace(id) == "" {
		return &hbError{Code: kerr.InvalidGroupID.Code}
	}
	if code := m.reg.OwnerCode(cl.Identity, id); code != 0 {
		return &hbError{Code: code}
	}
	g, code := m.acquire(ctx, cl.Identity, cl.KV, id)
	if code != 0 {
		return &hbError{Code: code}
	}
	if g == nil {
		if e := m.notShare(ctx, cl.Identity, cl.KV, id); e != nil {
			return e
		}
		return refuse(kerr.GroupIDNotFound.Code, "Group %s not found.", id)
	}
	defer g.mu.Unlock()
	d.GroupState = g.state()
	d.GroupEpoch, d.AssignmentEpoch = g.epoch, g.assignmentEpoch
	d.Assignor = AssignorName
	for _, mid := range g.memberIDs() {
		mb := g.members[mid]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch = mb.id, mb.rack, mb.epoch
		dm.ClientID, dm.ClientHost = mb.clientID, mb.host
		dm.SubscribedTopicNames = append([]string{}, mb.names...)
		for _, t := range mb.assigned.sortedIDs() {
			tp := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			tp.TopicID, tp.Topic = t, g.topicName(t)
			tp.Partitions = append([]int32(nil), mb.assigned[t]...)
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, tp)
		}
		d.Members = append(d.Members, dm)
	}
	return nil
}

// Holds reports whether id is a share group of identity this node
// coordinates, loading it from the store if needed, and whether it has
// members; code is the refusal when that cannot be known. For the other
// group types' answers to a share group's id.
func (m *Manager) Holds(ctx context.Context, identity string, kv KV, id string) (held, hasMembers bool, code int16) {
	k := groupKey{Identity: identity, ID: id}
	return groupreg.Holds(ctx, m.reg, k, m.loader(k, kv), memberCount)
}

// DeleteEmpty deletes an empty share group (Kafka's
// ShareGroup.validateDeleteGroup): its share-partition states first, then
// its own rows. NON_EMPTY_GROUP while it has members.
func (m *Manager) DeleteEmpty(ctx context.Context, identity string, kv KV, id string) (deleted bool, code int16) {
	k := groupKey{Identity: identity, ID: id}
	deleted, code = groupreg.DeleteEmpty(ctx, m.reg, k, m.loader(k, kv), memberCount, func(g *group) int16 {
		if err := sharepartition.DeleteGroup(ctx, kv, id); err != nil {
			m.log.Warn("deleting a share group's share-partition states failed", "group", id, "err", err)
			return codeOf(err)
		}
		return g.deleteRows(ctx, kv)
	})
	if deleted {
		m.log.Info("empty share group deleted", "group", id)
	}
	return deleted, code
}

// List is the share groups this node coordinates as ListGroups rows
// (group type and protocol type "share"), filtered as ListGroups v4-5
// filter, read from the rows' keys.
func (m *Manager) List(ctx context.Context, identity string, kv KV, statesFilter, typesFilter []string) ([]kmsg.ListGroupsResponseGroup, int16) {
	if !groupreg.Matches(typesFilter, "share") {
		return nil, 0
	}
	rows, err := queen.ReadPrefix(ctx, kv, queen.PrefixShareGroup, 1000, true)
	if err != nil {
		m.log.Warn("list groups: reading the share group rows failed", "err", err)
		return nil, codeOf(err)
	}
	groups := map[string]bool{} // id -> has members
	for _, r := range rows {
		rest, _ := strings.CutPrefix(r.Key, queen.PrefixShareGroup)
		esc, tail, ok := strings.Cut(rest, ":")
		id, okID := queen.Unesc(esc)
		if !ok || !okID {
			continue
		}
		switch {
		case tail == "g":
			if _, ok := groups[id]; !ok {
				groups[id] = false
			}
		case strings.HasPrefix(tail, "m:"):
			groups[id] = true
		}
	}
	var out []kmsg.ListGroupsResponseGroup
	for id, members := range groups {
		st := StateEmpty
		if members {
			st = StateStable
		}
		if !m.reg.Owned(id) || !groupreg.Matches(statesFilter, st) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, "share", st, "share"
		out = append(out, lg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, 0
}

// State reports, from the group's rows on any node, whether group is a
// share group and whether it has no members (for the admin APIs).
func (m *Manager) State(ctx context.Context, kv KV, group string) (exists, empty bool, err error) {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(group), 1000, true)
	if err != nil {
		return false, false, err
	}
	empty = true
	for _, r := range rows {
		exists = exists || r.Key == queen.ShareGroupMetaKey(group)
		empty = empty && !strings.HasPrefix(r.Key, queen.ShareGroupPrefix(group)+"m:")
	}
	return exists, empty, nil
}

// Subscribed is every topic name the group's members subscribe to, sorted
// (read from the rows, on any node).
func (m *Manager) Subscribed(ctx context.Context, kv KV, group string) ([]string, error) {
	rows, err := queen.ReadPrefix(ctx, kv, queen.ShareGroupPrefix(group)+"m:", 1000, false)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	for _, r := range rows {
		var mr memberRow
		if json.Unmarshal(r.Value, &mr) == nil {
			for _, n := range mr.Names {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// Member is 0 when member is a current member of share group group, read
// from its row (any node may ask; a positive answer is cached for
// memberCacheTTL), else what ShareFetch answers: INVALID_GROUP_ID for an
// empty id, GROUP_ID_NOT_FOUND when no share group has the id,
// UNKNOWN_MEMBER_ID when the member is not in it, or the code of a store
// failure.
func (m *Manager) Member(ctx context.Context, kv KV, group, member string) int16 {
	switch {
	case strings.TrimSpace(group) == "":
		return kerr.InvalidGroupID.Code
	case strings.TrimSpace(member) == "":
		return kerr.UnknownMemberID.Code
	case m.cacheHit(kv, group, member):
		return 0
	}
	metaKey, memberKey := queen.ShareGroupMetaKey(group), queen.ShareGroupMemberKey(group, member)
	rows, err := queen.ReadKeys(ctx, kv, []string{metaKey, memberKey}, 2)
	if err != nil {
		return faults.GroupCode(err)
	}
	if _, ok := rows[memberKey]; ok {
		m.cacheAdd(kv, group, member)
		return 0
	}
	if _, ok := rows[metaKey]; !ok {
		return kerr.GroupIDNotFound.Code
	}
	return kerr.UnknownMemberID.Code
}
