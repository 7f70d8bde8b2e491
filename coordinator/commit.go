package coordinator

import (
	"context"
	"github.com/queen-mq/queen-kafka/internal/codegrid"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// internalTopic reports a name the facade never serves: a `__` topic is
// UNKNOWN_TOPIC_OR_PARTITION on every API, so that no client can conjure
// or write an internal topic through it.
func internalTopic(t string) bool { return strings.HasPrefix(t, "__") }

// OffsetKey is the partition's §10 key, or "" and the code a commit of it
// is refused with when no such key can exist.
func OffsetKey(group, topic string, partition int32) (string, int16) {
	if topic == "" || internalTopic(topic) || partition < 0 {
		return "", kerr.UnknownTopicOrPartition.Code
	}
	k := queen.GroupOffsetKey(group, topic, partition)
	if len(k) > queen.MaxKeyBytes {
		return "", kerr.InvalidCommitOffsetSize.Code
	}
	return k, 0
}

// OffsetCommit answers an OffsetCommit v2-9 (v7: group_instance_id; v8
// flexible; v9 the same fields, its generation a classic group's). A partition cl.Topics does
// not serve is refused first, whatever the group's state, and a request
// with nothing else is answered without touching the group. Group members
// are checked as Kafka checks them; a commit with generation -1 and no
// member id (an assign() consumer) is accepted while the group has no
// members. Offsets are written to Queen KV and never expire.
func (c *Coordinator) OffsetCommit(ctx context.Context, cl Client, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := codegrid.New(req.Topics, func(t kmsg.OffsetCommitRequestTopic) int { return len(t.Partitions) })
	parts := codes.Len()
	setAll := codes.Fill
	defer func() {
		for i, t := range req.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for j, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = codes[i][j]
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	}()

	if refused := refuseUnserved(ctx, cl.Topics, req, codes); refused > 0 && refused == parts {
		return resp
	}
	if !validGroupID(req.Group, true) {
		setAll(kerr.InvalidGroupID.Code)
		return resp
	}
	if code := c.ownerCode(cl, req.Group); code != 0 {
		setAll(code)
		return resp
	}
	if code := c.notConsumer(ctx, cl, req.Group); code != 0 {
		setAll(code)
		return resp
	}
	held, code := c.consumerCommit(ctx, cl, req.Group, req.MemberID, req.Generation, false, req.Version)
	var g *group
	switch {
	case code != 0:
		setAll(code)
		return resp
	case held:
		// A consumer-protocol group: its member epoch was checked there;
		// the group object here only serialises and fences the writes.
		var err error
		if g, err = c.getOrCreate(cl, req.Group); err != nil {
			setAll(kerr.CoordinatorNotAvailable.Code)
			return resp
		}
	default:
		if g, code = c.commitMember(cl, req); code != 0 {
			setAll(code)
			return resp
		}
	}

	// A partition named twice is written once, with the last value.
	var writes batch
	now := c.clock.Now().UnixMilli()
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			if codes[i][j] != 0 {
				continue // refused: not served here
			}
			key, code := OffsetKey(req.Group, t.Topic, p.Partition)
			if code != 0 {
				codes[i][j] = code
				continue
			}
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if len(md) > MaxMetadataBytes {
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			writes.add(OffsetWrite(key, p.Offset, md, now), i, j)
		}
	}
	if len(writes.ops) == 0 {
		return resp
	}

	kv := c.kvFor(cl)
	g.wmu.Lock()
	defer g.wmu.Unlock()
	if code := g.writable(); code != 0 {
		writes.fail(codes, 0, code)
		return resp
	}
	g.mu.Lock()
	ptype, gen := g.protocolType, g.generation
	g.mu.Unlock()
	if held {
		ptype = consumerProtocolType
	}
	if !g.indexed {
		// The existence index goes first, in its own call, so that no
		// committed offset is ever left without the row that lists its group.
		if _, err := kv.KV(ctx, []queen.KVOp{IndexWrite(req.Group, ptype, now)}); err != nil {
			c.log.Warn("offset commit failed: group index write", "group", req.Group, "err", err)
			writes.fail(codes, 0, kvCode(err))
			return resp
		}
		g.indexed = true
	}
	n, err := c.writeOps(ctx, kv, g, gen, writes.ops)
	if err != nil {
		c.log.Warn("offset commit failed", "group", req.Group, "written", n, "of", len(writes.ops), "err", err)
		writes.fail(codes, n, c.writeCode(g, err))
	}
	return resp
}

// commitMember applies Kafka's membership rules to a commit (v7 and up
// name the static member's instance id, fenced as Kafka fences it) and
// returns the group the commit writes under.
func (c *Coordinator) commitMember(cl Client, req *kmsg.OffsetCommitRequest) (*group, int16) {
	g := c.lookup(cl, req.Group)
	if g == nil {
		if req.Generation >= 0 {
			// A generation from before this process knew the group (a
			// restart): the member must rejoin. Kafka's v9 would say
			// GROUP_ID_NOT_FOUND for a group it never had; here the group
			// usually exists in the store and only its membership was lost,
			// which every version's ILLEGAL_GENERATION sends to rejoin.
			return nil, kerr.IllegalGeneration.Code
		}
		var err error
		if g, err = c.getOrCreate(cl, req.Group); err != nil {
			return nil, kerr.CoordinatorNotAvailable.Code
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if code := g.validateCommit(req.MemberID, req.InstanceID, req.Generation, false); code != 0 {
		return nil, code
	}
	if m := g.members[req.MemberID]; m != nil {
		g.touch(m)
	}
	return g, 0
}

// writable is 0 unless the group died while a write waited for wmu: then
// the code it died with (NOT_COORDINATOR after a lost fence), or
// COORDINATOR_NOT_AVAILABLE, which is retried against its successor.
func (g *group) writable() int16 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != stateDead {
		return 0
	}
	if g.deadCode != 0 {
		return g.deadCode
	}
	return kerr.CoordinatorNotAvailable.Code
}

// TxnCommitCheck is Kafka's membership rule for TxnOffsetCommit, for the
// transaction code that stages offsets itself: 0 and the group's protocol
// type (what its index row records; "" for a group no member joined), or
// the code every partition is answered. A commit naming a member, an
// instance id (v3, static membership) or a generation must be the current
// generation of a current member (validateCommit); one naming none is
// accepted.
func (c *Coordinator) TxnCommitCheck(cl Client, group, memberID string, instanceID *string, generation int32) (int16, string) {
	if !validGroupID(group, true) {
		return kerr.InvalidGroupID.Code, ""
	}
	if code := c.ownerCode(cl, group); code != 0 {
		return code, ""
	}
	if code := c.notConsumer(context.Background(), cl, group); code != 0 {
		return code, ""
	}
	if memberID == "" && instanceID == nil && generation < 0 {
		// Naming no member (AddOffsetsToTxn's check, or a producer
		// committing for a group it is not in): accepted for a
		// consumer-protocol group as for a classic one. Kafka answers a
		// consumer group with members UNKNOWN_MEMBER_ID here.
		if held, _, code := c.consumerHeld(context.Background(), cl, group); held || code != 0 {
			return code, consumerProtocolType
		}
	} else if held, code := c.consumerCommit(context.Background(), cl, group, memberID, generation, true, 3); held || code != 0 {
		if code == kerr.StaleMemberEpoch.Code {
			// Kafka's OffsetMetadataManager answers a transactional
			// commit's stale member epoch ILLEGAL_GENERATION.
			code = kerr.IllegalGeneration.Code
		}
		return code, consumerProtocolType
	}
	g := c.lookup(cl, group)
	if g == nil {
		switch {
		case memberID != "" || instanceID != nil:
			return kerr.UnknownMemberID.Code, ""
		case generation >= 0:
			return kerr.IllegalGeneration.Code, ""
		}
		return 0, ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if code := g.validateCommit(memberID, instanceID, generation, true); code != 0 {
		return code, ""
	}
	if m := g.members[memberID]; m != nil {
		g.touch(m)
	}
	return 0, g.protocolType
}

// consumerProtocolType is the protocol type a consumer-protocol group's
// index row records, as its ListGroups row answers.
const consumerProtocolType = "consumer"

// consumerCommit is the consumer side's check of a commit for group
// (ConsumerGroups.ValidateCommit): held false leaves the classic rules.
func (c *Coordinator) consumerCommit(ctx context.Context, cl Client, group, memberID string, epoch int32, txn bool, version int16) (held bool, code int16) {
	if c.cfg.Consumer == nil {
		return false, 0
	}
	return c.cfg.Consumer.ValidateCommit(ctx, cl.Identity, cl.KV, group, memberID, epoch, txn, version)
}
