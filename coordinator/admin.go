package coordinator

import (
	"context"
	"encoding/json"
	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/internal/codegrid"
	"github.com/queen-mq/queen-kafka/internal/groupreg"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// classicGroupType is the group_type (ListGroups v5) of every group here:
// the facade runs the classic JoinGroup/SyncGroup protocol only, no
// KIP-848 consumer groups and no share groups.
const classicGroupType = "classic"

// ListGroups answers a ListGroups v0-5: the groups this node coordinates
// that are live in memory, with their state, plus every group the store's
// qk:groups: index knows and memory does not, listed as Empty with the
// protocol type it was indexed with (its offsets outlive its members, as
// Kafka's loaded-but-empty groups do). In a cluster each node lists only
// the groups it owns, so that an admin client merging every broker's
// answer sees each group once. states_filter (v4) matches as Kafka's does,
// trimmed and case-insensitively; types_filter (v5) case-insensitively,
// so that only "classic" selects anything.
func (c *Coordinator) ListGroups(ctx context.Context, cl Client, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	consumer := map[string]bool{}
	for _, kind := range []GroupKind{c.cfg.Consumer, c.cfg.Share} {
		if kind == nil {
			continue
		}
		// Every consumer or share group is left out of the classic rows
		// below, whatever the filters: its id is not a classic group's.
		all, code := kind.List(ctx, cl.Identity, c.kvFor(cl), nil, nil)
		if code != 0 {
			resp.ErrorCode = code
		}
		for _, g := range all {
			consumer[g.Group] = true
			if groupreg.Matches(req.StatesFilter, g.GroupState) && groupreg.Matches(req.TypesFilter, g.GroupType) {
				resp.Groups = append(resp.Groups, g)
			}
		}
	}
	defer sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	typeWanted := len(req.TypesFilter) == 0
	for _, f := range req.TypesFilter {
		typeWanted = typeWanted || strings.EqualFold(f, classicGroupType)
	}
	if !typeWanted {
		return resp
	}
	want := func(s state) bool {
		if len(req.StatesFilter) == 0 {
			return true
		}
		for _, f := range req.StatesFilter {
			if strings.EqualFold(strings.TrimSpace(f), s.String()) {
				return true
			}
		}
		return false
	}
	add := func(id, ptype string, s state) {
		if !want(s) {
			return
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group, lg.ProtocolType, lg.GroupState, lg.GroupType = id, ptype, s.String(), classicGroupType
		resp.Groups = append(resp.Groups, lg)
	}
	self := c.own.Self().NodeID
	owned := func(id string) (bool, error) {
		o, err := c.own.Owner(id)
		return err == nil && o.NodeID == self, err
	}

	c.mu.Lock()
	var live []*group
	for k, g := range c.groups {
		if k.identity == cl.Identity {
			live = append(live, g)
		}
	}
	c.mu.Unlock()
	inMemory := make(map[string]bool, len(live))
	for _, g := range live {
		g.mu.Lock()
		s, ptype := g.state, g.protocolType
		g.mu.Unlock()
		if s == stateDead || consumer[g.key.id] {
			continue
		}
		if ok, _ := owned(g.key.id); !ok {
			continue
		}
		inMemory[g.key.id] = true
		add(g.key.id, ptype, s)
	}

	rows, err := c.readPrefix(ctx, c.kvFor(cl), queen.PrefixGroups, indexPageLimit, false)
	if err != nil {
		c.log.Warn("list groups: reading the group index failed; answering the groups in memory", "err", err)
		resp.ErrorCode = kvCode(err)
	}
	for _, row := range rows {
		id, ok := queen.Unesc(strings.TrimPrefix(row.Key, queen.PrefixGroups))
		if !ok || inMemory[id] || consumer[id] {
			continue
		}
		if mine, err := owned(id); err != nil {
			resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			continue
		} else if !mine {
			continue
		}
		var iv indexValue
		_ = json.Unmarshal(row.Value, &iv) // an unreadable index row still names a group
		add(id, iv.PT, stateEmpty)
	}
	return resp
}

// DescribeGroups answers a DescribeGroups v0-5 (v4: each member's
// group_instance_id; v5 flexible). Member metadata and
// assignment bytes are reported only while the group is Stable, as Kafka
// does; a group known only from the index is Empty, an unknown one Dead.
// authorized_operations is Kafka's "omitted" sentinel here; the node sets
// it when a client asks, as KafkaApis does after the coordinator answers.
func (c *Coordinator) DescribeGroups(ctx context.Context, cl Client, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		d, consumer := c.describe(ctx, cl, id)
		if consumer && req.Version >= 6 {
			// Kafka 4 describes only classic groups here: a
			// consumer-protocol group is "not a classic group" (v6) or
			// Dead (below); ConsumerGroupDescribe describes it.
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " is not a classic group."
			d.ErrorMessage = &msg
			resp.Groups = append(resp.Groups, d)
			continue
		}
		if req.Version >= 6 && d.ErrorCode == 0 && d.State == stateDead.String() {
			// KIP-1043: from v6 a group that does not exist is an error
			// with a message, where older versions describe it Dead.
			d.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + id + " not found."
			d.ErrorMessage = &msg
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp
}

// describe is one group's answer; consumer reports a consumer-protocol
// group, described Dead here as Kafka does.
func (c *Coordinator) describe(ctx context.Context, cl Client, id string) (d kmsg.DescribeGroupsResponseGroup, consumer bool) {
	d = kmsg.NewDescribeGroupsResponseGroup()
	d.Group = id
	d.AuthorizedOperations = authz.NotAsked
	d.State = stateDead.String()
	if !validGroupID(id, true) {
		d.ErrorCode = kerr.InvalidGroupID.Code
		return d, false
	}
	if code := c.ownerCode(cl, id); code != 0 {
		d.ErrorCode = code
		return d, false
	}
	if held, _, code := c.consumerHeld(ctx, cl, id); code != 0 || held {
		d.ErrorCode = code
		return d, held
	}
	if held, _, code := c.shareHeld(ctx, cl, id); code != 0 || held {
		d.ErrorCode = code
		return d, held
	}
	if g := c.lookup(cl, id); g != nil && g.describe(&d) {
		return d, false
	}
	if !storable(id) {
		return d, false
	}
	rows, err := c.readKeys(ctx, c.kvFor(cl), []string{queen.GroupIndexKey(id)})
	if err != nil {
		c.log.Warn("describe group: reading the group index failed", "group", id, "err", err)
		d.ErrorCode = kvCode(err)
		return d, false
	}
	if row, ok := rows[queen.GroupIndexKey(id)]; ok {
		var iv indexValue
		_ = json.Unmarshal(row.Value, &iv)
		d.State, d.ProtocolType = stateEmpty.String(), iv.PT
	}
	return d, false
}

// describe fills d from the group in memory and reports whether it could:
// a Dead group is described from the store, which is read after this
// returns, never under g.mu.
func (g *group) describe(d *kmsg.DescribeGroupsResponseGroup) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == stateDead {
		return false
	}
	d.State, d.ProtocolType = g.state.String(), g.protocolType
	stable := g.state == stateStable
	if stable {
		d.Protocol = g.protocol
	}
	for _, mid := range g.order {
		m := g.members[mid]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadataFor(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		d.Members = append(d.Members, dm)
	}
	return true
}

// DeleteGroups answers a DeleteGroups v0-3: a group with live members is
// NON_EMPTY_GROUP; otherwise every committed offset is deleted, and the
// index row last, so that a deletion cut short leaves a group that is still
// listed and can be deleted again. v3's per-group error_message is null on
// success and the error's description otherwise.
func (c *Coordinator) DeleteGroups(ctx context.Context, cl Client, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		dg := kmsg.NewDeleteGroupsResponseGroup()
		dg.Group = id
		dg.ErrorCode = c.deleteGroup(ctx, cl, id)
		if ke, ok := kerr.ErrorForCode(dg.ErrorCode).(*kerr.Error); ok && req.Version >= 3 {
			dg.ErrorMessage = &ke.Description
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (c *Coordinator) deleteGroup(ctx context.Context, cl Client, id string) int16 {
	if !validGroupID(id, true) {
		return kerr.InvalidGroupID.Code
	}
	if code := c.ownerCode(cl, id); code != 0 {
		return code
	}
	if held, _, code := c.shareHeld(ctx, cl, id); code != 0 || held {
		// Kafka's ShareGroup.validateDeleteGroup: only an empty group goes,
		// with its share-partition states; it never has offsets here.
		if held {
			_, code = c.cfg.Share.DeleteEmpty(ctx, cl.Identity, c.kvFor(cl), id)
		}
		return code
	}
	consumerDeleted := false
	if held, _, code := c.consumerHeld(ctx, cl, id); code != 0 {
		return code
	} else if held {
		// Kafka's ConsumerGroup.validateDeleteGroup: only an empty group
		// goes; its state first, then its offsets below.
		if _, code := c.cfg.Consumer.DeleteEmpty(ctx, cl.Identity, cl.KV, id); code != 0 {
			return code
		}
		consumerDeleted = true
	}
	code := c.deleteClassic(ctx, cl, id)
	if consumerDeleted && code == kerr.GroupIDNotFound.Code {
		// No offsets and no classic group: the group deleted was the
		// consumer-protocol one, which existed.
		return 0
	}
	return code
}

// deleteClassic deletes a classic group (or the offsets of a group the
// consumer side just deleted): the rows go, the group's index last.
func (c *Coordinator) deleteClassic(ctx context.Context, cl Client, id string) int16 {
	// The group is held Dead while its rows go, so a JoinGroup meanwhile is
	// answered COORDINATOR_NOT_AVAILABLE and retried after.
	k := groupKey{cl.Identity, id}
	c.mu.Lock()
	g, inMemory := c.groups[k]
	if !inMemory {
		g = newGroup(c, k)
		c.groups[k] = g
	}
	c.mu.Unlock()
	g.mu.Lock()
	switch g.state {
	case stateDead:
		g.mu.Unlock()
		if !inMemory {
			c.forget(g)
		}
		return kerr.GroupIDNotFound.Code
	case stateEmpty:
	default:
		g.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	if len(g.pending) > 0 {
		g.mu.Unlock()
		return kerr.NonEmptyGroup.Code
	}
	g.state = stateDead
	gen := g.generation
	g.mu.Unlock()

	code := c.deleteRows(ctx, c.kvFor(cl), g, gen, inMemory)
	switch code {
	case 0, kerr.GroupIDNotFound.Code:
		c.forget(g)
	case kerr.NotCoordinator.Code:
		c.dropGroup(g)
	default:
		g.mu.Lock()
		g.state = stateEmpty
		g.mu.Unlock()
		if !inMemory {
			c.forget(g)
		}
	}
	return code
}

func (c *Coordinator) deleteRows(ctx context.Context, kv KV, g *group, gen int32, inMemory bool) int16 {
	g.wmu.Lock()
	defer g.wmu.Unlock()
	id := g.key.id
	if !storable(id) {
		if inMemory {
			return 0
		}
		return kerr.GroupIDNotFound.Code
	}
	var rows []queen.KVRow
	if prefix := queen.GroupOffsetPrefix(id); len(prefix) <= queen.MaxKeyBytes {
		var err error
		if rows, err = c.readPrefix(ctx, kv, prefix, readKeysPerCall, true); err != nil {
			c.log.Warn("delete group: listing offsets failed", "group", id, "err", err)
			return kvCode(err)
		}
	}
	idx, err := c.readKeys(ctx, kv, []string{queen.GroupIndexKey(id)})
	if err != nil {
		c.log.Warn("delete group: reading the index failed", "group", id, "err", err)
		return kvCode(err)
	}
	_, indexed := idx[queen.GroupIndexKey(id)]
	if !inMemory && !indexed && len(rows) == 0 {
		return kerr.GroupIDNotFound.Code
	}
	writes := make([]queen.KVOp, 0, len(rows)+1)
	for _, r := range rows {
		writes = append(writes, deleteOp(r.Key))
	}
	writes = append(writes, deleteOp(queen.GroupIndexKey(id)))
	if n, err := c.writeOps(ctx, kv, g, gen, writes); err != nil {
		c.log.Warn("delete group failed", "group", id, "deleted", n, "of", len(writes), "err", err)
		return kvCode(err) // NOT_COORDINATOR for a lost fence; DeleteGroup drops the group on it
	}
	g.indexed = false
	return 0
}

// OffsetDelete answers an OffsetDelete v0. Kafka's guard is subscription,
// not membership: a topic a live consumer-protocol member subscribes to
// (read from the verbatim JoinGroup metadata) is GROUP_SUBSCRIBED_TO_TOPIC,
// every other requested partition is deleted.
func (c *Coordinator) OffsetDelete(ctx context.Context, cl Client, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	codes := codegrid.New(req.Topics, func(t kmsg.OffsetDeleteRequestTopic) int { return len(t.Partitions) })
	defer func() {
		if resp.ErrorCode != 0 {
			return
		}
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()
	if !validGroupID(req.Group, true) {
		resp.ErrorCode = kerr.InvalidGroupID.Code
		return resp
	}
	if code := c.ownerCode(cl, req.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	if code := c.notConsumer(ctx, cl, req.Group); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	kv := c.kvFor(cl)
	if c.lookup(cl, req.Group) == nil {
		known, err := c.storeKnows(ctx, kv, req.Group)
		if err != nil {
			c.log.Warn("offset delete: reading the group failed", "group", req.Group, "err", err)
			resp.ErrorCode = kvCode(err)
			return resp
		}
		if !known {
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			return resp
		}
	}
	g, err := c.getOrCreate(cl, req.Group)
	if err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp
	}
	g.wmu.Lock()
	defer g.wmu.Unlock()
	g.mu.Lock()
	s, ptype, gen := g.state, g.protocolType, g.generation
	var subscribed map[string]bool
	allSubscribed := false
	if s != stateEmpty && s != stateDead {
		if ptype != "consumer" {
			g.mu.Unlock()
			resp.ErrorCode = kerr.NonEmptyGroup.Code
			return resp
		}
		subscribed, allSubscribed = g.subscribedTopics()
	}
	g.mu.Unlock()
	if s == stateDead {
		resp.ErrorCode = kerr.GroupIDNotFound.Code
		return resp
	}
	if c.cfg.Consumer != nil {
		held, topics, code := c.cfg.Consumer.Subscribed(ctx, cl.Identity, cl.KV, req.Group)
		if code != 0 {
			resp.ErrorCode = code
			return resp
		}
		if held {
			subscribed, allSubscribed = topics, false
		}
	}

	var writes batch
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if allSubscribed || subscribed[t.Topic] {
				codes[i][j] = kerr.GroupSubscribedToTopic.Code
				continue
			}
			key, code := OffsetKey(req.Group, t.Topic, p.Partition)
			if code == kerr.InvalidCommitOffsetSize.Code {
				continue // a key that cannot exist is already deleted
			}
			if code != 0 {
				codes[i][j] = code
				continue
			}
			writes.add(deleteOp(key), i, j)
		}
	}
	n, err := c.writeOps(ctx, kv, g, gen, writes.ops)
	if err != nil {
		c.log.Warn("offset delete failed", "group", req.Group, "deleted", n, "of", len(writes.ops), "err", err)
		code := c.writeCode(g, err)
		if n == 0 {
			resp.ErrorCode = code
			return resp
		}
		writes.fail(codes, n, code)
	}
	return resp
}

// storable reports whether any row of group fits the store's key
// ceiling. The index key is the shortest of a group's keys that is read,
// so a group whose index key is too long has nothing in the store.
func storable(group string) bool {
	return len(queen.GroupIndexKey(group)) <= queen.MaxKeyBytes
}

// storeKnows reports whether the store has the group's index row or any
// committed offset of it, in one call.
func (c *Coordinator) storeKnows(ctx context.Context, kv KV, group string) (bool, error) {
	if !storable(group) {
		return false, nil
	}
	ops := []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{queen.GroupIndexKey(group)}}}
	if prefix := queen.GroupOffsetPrefix(group); len(prefix) <= queen.MaxKeyBytes {
		ops = append(ops, queen.KVOp{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: 1, KeysOnly: true})
	}
	res, err := kv.KV(ctx, ops)
	if err != nil {
		return false, err
	}
	if len(res[0].Rows) > 0 || (len(ops) > 1 && len(res[1].Rows) > 0) {
		return true, nil
	}
	// A budget-cut index read is unknown, not absent.
	if len(res[0].Missing) == 0 {
		return false, errUnread
	}
	return false, nil
}

// subscribedTopics is the union of every member's subscription for the
// chosen protocol. all is true when it cannot be known (no protocol chosen
// yet, or metadata that does not parse): Kafka then treats every topic as
// subscribed, and so does this.
func (g *group) subscribedTopics() (topics map[string]bool, all bool) {
	if g.protocol == "" {
		return nil, true
	}
	topics = map[string]bool{}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadataFor(g.protocol)); err != nil {
			return nil, true
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, false
}
