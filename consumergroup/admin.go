package consumergroup

import (
	"context"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"github.com/queen-mq/queen-kafka/queen"
)

// Describe answers a ConsumerGroupDescribe v0-1 (Kafka's
// ConsumerGroup.asDescribedGroup): the group epoch, the target
// assignment's epoch, the assignor, and every member with its subscription,
// its current assignment and its target. A group id this node holds no
// consumer-protocol group for is GROUP_ID_NOT_FOUND.
func (m *Manager) Describe(ctx context.Context, cl Client, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		d := kmsg.NewConsumerGroupDescribeResponseGroup()
		d.Group = id
		d.AuthorizedOperations = authz.NotAsked // "omitted": the node sets it when asked
		d.ErrorCode, d.ErrorMessage = m.describe(ctx, cl, id, &d, req.Version)
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

func (m *Manager) describe(ctx context.Context, cl Client, id string, d *kmsg.ConsumerGroupDescribeResponseGroup, version int16) (int16, *string) {
	if id == "" {
		return kerr.InvalidGroupID.Code, nil
	}
	if code := m.ownerCode(cl.Identity, id); code != 0 {
		return code, nil
	}
	g, code := m.acquire(ctx, cl, id)
	if code != 0 {
		return code, nil
	}
	if g == nil {
		msg := "Group " + id + " not found."
		return kerr.GroupIDNotFound.Code, &msg
	}
	defer g.mu.Unlock()
	d.State = g.state()
	d.Epoch = g.epoch
	d.AssignmentEpoch = g.assignmentEpoch
	d.AssignorName = g.preferredAssignor()
	ids := g.memberIDs()
	for _, mid := range ids {
		mb := g.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID = mb.id, mb.instanceID, mb.rack
		dm.MemberEpoch = mb.epoch
		dm.ClientID, dm.ClientHost = mb.clientID, mb.clientHost
		dm.SubscribedTopics = append([]string{}, mb.names...)
		if mb.regex != "" {
			r := mb.regex
			dm.SubscribedTopicRegex = &r
		}
		dm.Assignment = g.describeParts(mb.assigned)
		dm.TargetAssignment = g.describeParts(g.target[mid])
		if version >= 1 {
			dm.MemberType = 1 // consumer: this facade has no classic members in consumer groups
		}
		d.Members = append(d.Members, dm)
	}
	return 0, nil
}

func (g *group) describeParts(p parts) kmsg.Assignment {
	a := kmsg.NewAssignment()
	for _, t := range p.topics() {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = t
		tp.Topic = g.topicName(t)
		tp.Partitions = append([]int32{}, p[t]...)
		a.TopicPartitions = append(a.TopicPartitions, tp)
	}
	return a
}

// List is the consumer-protocol groups of identity this node coordinates,
// as ListGroups v5 rows (group_type "consumer", protocol type "consumer"):
// those in memory and those only in the store (loaded: this node owns
// them). statesFilter and typesFilter are matched as Kafka matches them,
// case-insensitively.
func (m *Manager) List(ctx context.Context, identity string, kv KV, statesFilter, typesFilter []string) ([]kmsg.ListGroupsResponseGroup, int16) {
	var code int16
	ids := map[string]bool{}
	for _, k := range m.reg.Keys() {
		if k.Identity == identity {
			ids[k.ID] = true
		}
	}
	if kv == nil {
		kv = m.cfg.KV
	}
	res, err := readPrefixKeys(ctx, kv)
	if err != nil {
		m.log.Warn("list groups: reading the consumer group rows failed; answering the groups in memory", "err", err)
		code = codeOf(err)
	}
	for _, k := range res {
		rest, ok := strings.CutPrefix(k, queen.PrefixConsumerGroup)
		if !ok {
			continue
		}
		esc, tail, ok := strings.Cut(rest, ":")
		if !ok || tail != "g" {
			continue
		}
		if id, ok := queen.Unesc(esc); ok {
			ids[id] = true
		}
	}
	var out []kmsg.ListGroupsResponseGroup
	for id := range ids {
		if !m.owned(id) {
			continue
		}
		g, c := m.lookup(ctx, Client{Identity: identity, KV: kv}, id)
		if c != 0 {
			code = c
			continue
		}
		if g == nil {
			continue
		}
		g.mu.Lock()
		st, dead := g.state(), g.dead
		g.mu.Unlock()
		if dead || !groupreg.Matches(statesFilter, st) || !groupreg.Matches(typesFilter, "consumer") {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, "consumer", st, "consumer"
		out = append(out, lg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Group < out[j].Group })
	return out, code
}

func (m *Manager) owned(id string) bool { return m.reg.Owned(id) }

// readPrefixKeys lists the keys under qk:cg: (every group's rows).
func readPrefixKeys(ctx context.Context, kv KV) ([]string, error) {
	rows, err := queen.ReadPrefix(ctx, kv, queen.PrefixConsumerGroup, 1000, true)
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	return keys, err
}

// ValidateCommit is Kafka's ConsumerGroup.validateOffsetCommit for an
// OffsetCommit (txn false) or a TxnOffsetCommit (txn true) naming group:
// held is false when group is not a consumer-protocol group here (the
// classic rules apply); otherwise code is 0 or the refusal. A commit with
// a negative epoch is an admin's or an assign() consumer's, accepted while
// the group has no members; any other must come from a current member at
// its current epoch (STALE_MEMBER_EPOCH otherwise), with OffsetCommit v9
// or later.
func (m *Manager) ValidateCommit(ctx context.Context, identity string, kv KV, group, memberID string, epoch int32, txn bool, version int16) (held bool, code int16) {
	g, code := m.heldGroup(ctx, identity, kv, group)
	if g == nil {
		return false, code
	}
	v := g.view.Load()
	if v == nil || v.dead {
		return true, kerr.CoordinatorNotAvailable.Code
	}
	if epoch < 0 && len(v.epochs) == 0 {
		return true, 0
	}
	cur, ok := v.epochs[memberID]
	if !ok {
		return true, kerr.UnknownMemberID.Code
	}
	if !txn && version < 9 {
		return true, kerr.UnsupportedVersion.Code
	}
	if epoch != cur {
		return true, kerr.StaleMemberEpoch.Code
	}
	return true, 0
}

// ValidateFetch is Kafka's ConsumerGroup.validateOffsetFetch for an
// OffsetFetch v9+ naming group with a member: no member id and a negative
// epoch (an admin client) is accepted; otherwise the member must exist
// (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH).
func (m *Manager) ValidateFetch(ctx context.Context, identity string, kv KV, group string, memberID *string, epoch int32) (held bool, code int16) {
	g, code := m.heldGroup(ctx, identity, kv, group)
	if g == nil {
		return false, code
	}
	if memberID == nil && epoch < 0 {
		return true, 0
	}
	v := g.view.Load()
	if v == nil || v.dead {
		return true, kerr.CoordinatorNotAvailable.Code
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	cur, ok := v.epochs[id]
	if !ok {
		return true, kerr.UnknownMemberID.Code
	}
	if epoch != cur {
		return true, kerr.StaleMemberEpoch.Code
	}
	return true, 0
}

// heldGroup is group when it is a consumer-protocol group this node
// coordinates; nil otherwise, with the code when that cannot be known.
func (m *Manager) heldGroup(ctx context.Context, identity string, kv KV, group string) (*group, int16) {
	if !m.owned(group) {
		return nil, 0
	}
	return m.lookup(ctx, Client{Identity: identity, KV: kv}, group)
}

// Subscribed is the topics group's members subscribe to, by name or
// through a resolved regular expression (Kafka's
// ConsumerGroup.isSubscribedToTopic, which OffsetDelete refuses
// GROUP_SUBSCRIBED_TO_TOPIC); held is false when group is not a
// consumer-protocol group here.
func (m *Manager) Subscribed(ctx context.Context, identity string, kv KV, group string) (held bool, topics map[string]bool, code int16) {
	g, code := m.heldGroup(ctx, identity, kv, group)
	if g == nil {
		return false, nil, code
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dead {
		return true, nil, kerr.CoordinatorNotAvailable.Code
	}
	topics = map[string]bool{}
	for _, n := range g.subscribedNames() {
		topics[n] = true
	}
	return true, topics, 0
}
