package node

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// admin is the part of franz-go's admin client (kadm) that node's tests used,
// written as the kmsg requests kadm issues through a kgo client: kadm is a
// module of its own, test-only, and lives in the test module (issue 19), while
// node's tests keep to the franz-go module the product already requires. Each
// method sends what kadm sends for it (same request, same fields, through the
// same kgo sharding), so the facade meets the same wire; the answers keep
// kadm's shape (names, Err per entry) so the assertions read as before.
type admin struct{ cl *kgo.Client }

func newAdmin(cl *kgo.Client) *admin { return &admin{cl: cl} }

// adminTimeoutMillis is kadm's default request timeout, sent in CreateTopics
// and ListOffsets.
const adminTimeoutMillis = 15_000

// sharded issues req through kgo's sharding and hands each answer to each;
// the first failed shard is the error, as kadm's shard errors report it.
func (a *admin) sharded(ctx context.Context, req kmsg.Request, each func(kmsg.Response)) error {
	var errs []error
	for _, s := range a.cl.RequestSharded(ctx, req) {
		if s.Err != nil {
			errs = append(errs, s.Err)
			continue
		}
		each(s.Resp)
	}
	return errors.Join(errs...)
}

// CreateTopic creates topic with parts partitions; the topic's own error
// code is the error.
func (a *admin) CreateTopic(ctx context.Context, parts int32, rf int16, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = adminTimeoutMillis
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, parts, rf
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return err
	}
	for _, t := range resp.Topics {
		if t.Topic == topic {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil && t.ErrorMessage != nil {
				// The message names the cause (Queen's reason, for a fault).
				return fmt.Errorf("%w: %s", err, *t.ErrorMessage)
			}
			return kerr.ErrorForCode(t.ErrorCode)
		}
	}
	return errors.New("requested topic was not part of create topic response")
}

type adminPartition struct {
	Partition   int32
	LeaderEpoch int32
	Err         error
}

type adminTopic struct {
	Topic      string
	ID         [16]byte
	Partitions map[int32]adminPartition
	Err        error
}

type adminMetadata struct{ Topics map[string]adminTopic }

// Metadata describes topics (every topic when none is named).
func (a *admin) Metadata(ctx context.Context, topics ...string) (adminMetadata, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.IncludeClusterAuthorizedOperations = true
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := a.cl.RequestCachedMetadata(ctx, req, 0)
	if err != nil {
		return adminMetadata{}, err
	}
	md := adminMetadata{Topics: map[string]adminTopic{}}
	for _, t := range resp.Topics {
		name := ""
		if t.Topic != nil {
			name = *t.Topic
		}
		td := adminTopic{Topic: name, ID: t.TopicID, Partitions: map[int32]adminPartition{}, Err: kerr.ErrorForCode(t.ErrorCode)}
		for _, p := range t.Partitions {
			td.Partitions[p.Partition] = adminPartition{Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}
		}
		md.Topics[name] = td
	}
	return md, nil
}

// ListTopics is Metadata's topics.
func (a *admin) ListTopics(ctx context.Context, topics ...string) (map[string]adminTopic, error) {
	md, err := a.Metadata(ctx, topics...)
	return md.Topics, err
}

// adminOffset is a committed (or to-be-committed) offset.
type adminOffset struct {
	Topic       string
	Partition   int32
	At          int64
	LeaderEpoch int32
	Err         error
}

type adminOffsets map[string]map[int32]adminOffset

func (os *adminOffsets) Add(o adminOffset) {
	if *os == nil {
		*os = adminOffsets{}
	}
	if (*os)[o.Topic] == nil {
		(*os)[o.Topic] = map[int32]adminOffset{}
	}
	(*os)[o.Topic][o.Partition] = o
}

func (os adminOffsets) Lookup(topic string, p int32) (adminOffset, bool) {
	o, ok := os[topic][p]
	return o, ok
}

// Error is the first partition's error, if any.
func (os adminOffsets) Error() error {
	for _, ps := range os {
		for _, o := range ps {
			if o.Err != nil {
				return o.Err
			}
		}
	}
	return nil
}

// offsetsFromRecords are the offsets that commit rs as consumed: each
// record's offset plus one, at its leader epoch.
func offsetsFromRecords(rs ...kgo.Record) adminOffsets {
	var os adminOffsets
	for _, r := range rs {
		os.Add(adminOffset{Topic: r.Topic, Partition: r.Partition, At: r.Offset + 1, LeaderEpoch: r.LeaderEpoch})
	}
	return os
}

// CommitOffsets commits os for group as an admin (generation -1), naming
// each topic by name and by the id Metadata gives it (v10 needs the id); a
// topic without an id is not sent and its partitions are
// UNKNOWN_TOPIC_OR_PARTITION.
func (a *admin) CommitOffsets(ctx context.Context, group string, os adminOffsets) (adminOffsets, error) {
	ids := map[string][16]byte{}
	if md, err := a.Metadata(ctx, slices.Collect(maps.Keys(os))...); err == nil {
		for name, td := range md.Topics {
			if td.Err == nil {
				ids[name] = td.ID
			}
		}
	}
	rs := adminOffsets{}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	for topic, ps := range os {
		id, ok := ids[topic]
		if !ok {
			for _, o := range ps {
				o.Err = kerr.UnknownTopicOrPartition
				rs.Add(o)
			}
			continue
		}
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = topic, id
		for _, o := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = o.Partition, o.At, o.LeaderEpoch
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	if len(req.Topics) == 0 {
		return rs, nil
	}
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, err
	}
	byID := map[[16]byte]string{}
	for name, id := range ids {
		byID[id] = name
	}
	for _, t := range resp.Topics {
		topic := t.Topic
		if topic == "" {
			topic = byID[t.TopicID]
		}
		for _, p := range t.Partitions {
			o := os[topic][p.Partition]
			o.Err = kerr.ErrorForCode(p.ErrorCode)
			rs.Add(o)
		}
	}
	for _, ps := range os {
		for _, o := range ps {
			if _, ok := rs.Lookup(o.Topic, o.Partition); !ok {
				o.Err = errors.New("partition missing in commit response")
				rs.Add(o)
			}
		}
	}
	return rs, nil
}

// FetchOffsets is every offset group has committed.
func (a *admin) FetchOffsets(ctx context.Context, group string) (adminOffsets, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	resp, err := req.RequestWith(ctx, a.cl)
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, err
	}
	rs := adminOffsets{}
	if len(resp.Groups) > 0 {
		g := resp.Groups[0]
		if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
			return nil, err
		}
		for _, t := range g.Topics {
			for _, p := range t.Partitions {
				rs.Add(adminOffset{Topic: t.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)})
			}
		}
		return rs, nil
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			rs.Add(adminOffset{Topic: t.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)})
		}
	}
	return rs, nil
}

type adminGroup struct {
	Group     string
	GroupType string
	State     string
	Err       error
}

type adminGroups map[string]adminGroup

// Groups are the listed groups' names, sorted.
func (gs adminGroups) Groups() []string {
	var names []string
	for g := range gs {
		names = append(names, g)
	}
	slices.Sort(names)
	return names
}

// ListGroups lists every group.
func (a *admin) ListGroups(ctx context.Context) (adminGroups, error) {
	return a.ListGroupsByType(ctx, nil)
}

// ListGroupsByType lists the groups of the given types, asking every broker.
func (a *admin) ListGroupsByType(ctx context.Context, types []string) (adminGroups, error) {
	req := kmsg.NewPtrListGroupsRequest()
	req.TypesFilter = append(req.TypesFilter, types...)
	gs := adminGroups{}
	var codes []error
	err := a.sharded(ctx, req, func(r kmsg.Response) {
		resp := r.(*kmsg.ListGroupsResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			codes = append(codes, err)
			return
		}
		for _, g := range resp.Groups {
			gs[g.Group] = adminGroup{Group: g.Group, GroupType: g.GroupType, State: g.GroupState}
		}
	})
	return gs, errors.Join(err, errors.Join(codes...))
}

// DescribeGroups describes the named groups.
func (a *admin) DescribeGroups(ctx context.Context, groups ...string) (adminGroups, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = groups
	req.IncludeAuthorizedOperations = true
	gs := adminGroups{}
	err := a.sharded(ctx, req, func(r kmsg.Response) {
		for _, g := range r.(*kmsg.DescribeGroupsResponse).Groups {
			gs[g.Group] = adminGroup{Group: g.Group, State: g.State, Err: kerr.ErrorForCode(g.ErrorCode)}
		}
	})
	return gs, err
}

type adminDeleted struct {
	Err        error
	ErrMessage string
}

// DeleteGroups deletes the named groups; each group's answer carries its
// error and, from v3, the error's message.
func (a *admin) DeleteGroups(ctx context.Context, groups ...string) (map[string]adminDeleted, error) {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = append(req.Groups, groups...)
	rs := map[string]adminDeleted{}
	err := a.sharded(ctx, req, func(r kmsg.Response) {
		for _, g := range r.(*kmsg.DeleteGroupsResponse).Groups {
			d := adminDeleted{Err: kerr.ErrorForCode(g.ErrorCode)}
			if g.ErrorMessage != nil {
				d.ErrMessage = *g.ErrorMessage
			}
			rs[g.Group] = d
		}
	})
	return rs, err
}

type adminCoordinator struct {
	NodeID int32
	Host   string
	Port   int32
	Err    error
}

type adminCoordinators map[string]adminCoordinator

// Error is the first key's error, if any.
func (cs adminCoordinators) Error() error {
	for _, c := range cs {
		if c.Err != nil {
			return c.Err
		}
	}
	return nil
}

func (a *admin) FindGroupCoordinators(ctx context.Context, groups ...string) adminCoordinators {
	return a.findCoordinators(ctx, 0, groups...)
}

func (a *admin) FindTxnCoordinators(ctx context.Context, ids ...string) adminCoordinators {
	return a.findCoordinators(ctx, 1, ids...)
}

// findCoordinators asks for keys' coordinators in one request; kgo splits it
// into one request a key below v4.
func (a *admin) findCoordinators(ctx context.Context, kind int8, keys ...string) adminCoordinators {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType, req.CoordinatorKeys = kind, keys
	cs := adminCoordinators{}
	for _, s := range a.cl.RequestSharded(ctx, req) {
		sent := s.Req.(*kmsg.FindCoordinatorRequest)
		if s.Err != nil {
			for _, k := range sent.CoordinatorKeys {
				cs[k] = adminCoordinator{Err: s.Err}
			}
			continue
		}
		for _, c := range s.Resp.(*kmsg.FindCoordinatorResponse).Coordinators {
			cs[c.Key] = adminCoordinator{NodeID: c.NodeID, Host: c.Host, Port: c.Port, Err: kerr.ErrorForCode(c.ErrorCode)}
		}
	}
	return cs
}

type adminListed struct {
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
	Err         error
}

type adminListedOffsets map[string]map[int32]adminListed

func (l adminListedOffsets) Lookup(topic string, p int32) (adminListed, bool) {
	o, ok := l[topic][p]
	return o, ok
}

func (a *admin) ListEndOffsets(ctx context.Context, topics ...string) (adminListedOffsets, error) {
	return a.listOffsets(ctx, -1, topics)
}

func (a *admin) ListMaxTimestampOffsets(ctx context.Context, topics ...string) (adminListedOffsets, error) {
	return a.listOffsets(ctx, -3, topics)
}

func (a *admin) ListLocalLogStartOffsets(ctx context.Context, topics ...string) (adminListedOffsets, error) {
	return a.listOffsets(ctx, -4, topics)
}

func (a *admin) ListLatestRemoteOffsets(ctx context.Context, topics ...string) (adminListedOffsets, error) {
	return a.listOffsets(ctx, -5, topics)
}

// listOffsets lists timestamp (a sentinel) for every partition Metadata
// gives topics.
func (a *admin) listOffsets(ctx context.Context, timestamp int64, topics []string) (adminListedOffsets, error) {
	tds, err := a.ListTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	l := adminListedOffsets{}
	req := kmsg.NewPtrListOffsetsRequest()
	req.TimeoutMillis = adminTimeoutMillis
	for name, td := range tds {
		if td.Err != nil {
			l[name] = map[int32]adminListed{-1: {Offset: -1, Err: td.Err}}
			continue
		}
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = name
		for p := range td.Partitions {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, timestamp
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	err = a.sharded(ctx, req, func(r kmsg.Response) {
		for _, t := range r.(*kmsg.ListOffsetsResponse).Topics {
			if l[t.Topic] == nil {
				l[t.Topic] = map[int32]adminListed{}
			}
			for _, p := range t.Partitions {
				l[t.Topic][p.Partition] = adminListed{Offset: p.Offset, Timestamp: p.Timestamp, LeaderEpoch: p.LeaderEpoch, Err: kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	})
	return l, err
}

// leaderEpochRequest is topic → partition → the leader epoch asked about.
type leaderEpochRequest map[string]map[int32]int32

func (r *leaderEpochRequest) Add(topic string, p, epoch int32) {
	if *r == nil {
		*r = leaderEpochRequest{}
	}
	if (*r)[topic] == nil {
		(*r)[topic] = map[int32]int32{}
	}
	(*r)[topic][p] = epoch
}

type adminEpochEnd struct {
	LeaderEpoch int32
	EndOffset   int64
	Err         error
}

// OffsetForLeaderEpoch asks where each requested epoch ends.
func (a *admin) OffsetForLeaderEpoch(ctx context.Context, r leaderEpochRequest) (map[string]map[int32]adminEpochEnd, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	for topic, ps := range r {
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = topic
		for p, e := range ps {
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.LeaderEpoch = p, e
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	rs := map[string]map[int32]adminEpochEnd{}
	err := a.sharded(ctx, req, func(resp kmsg.Response) {
		for _, t := range resp.(*kmsg.OffsetForLeaderEpochResponse).Topics {
			if rs[t.Topic] == nil {
				rs[t.Topic] = map[int32]adminEpochEnd{}
			}
			for _, p := range t.Partitions {
				rs[t.Topic][p.Partition] = adminEpochEnd{LeaderEpoch: p.LeaderEpoch, EndOffset: p.EndOffset, Err: kerr.ErrorForCode(p.ErrorCode)}
			}
		}
	})
	return rs, err
}
