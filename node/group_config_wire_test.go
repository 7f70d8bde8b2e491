package node

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharegroup"
	"github.com/queen-mq/queen-kafka/transport"
)

func describeGroupConfigs(t *testing.T, n *Node, c *transport.Conn, group string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, group, names
	req.Resources = append(req.Resources, r)
	return call[*kmsg.DescribeConfigsResponse](t, n, c, req).Resources[0]
}

func alterGroupConfigs(t *testing.T, n *Node, c *transport.Conn, group string, validateOnly bool, cfgs ...kmsg.IncrementalAlterConfigsRequestResourceConfig) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.Version, req.ValidateOnly = 1, validateOnly
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, group, cfgs
	req.Resources = append(req.Resources, r)
	return call[*kmsg.IncrementalAlterConfigsResponse](t, n, c, req).Resources[0]
}

func groupOp(op kmsg.IncrementalAlterConfigOp, name string, value *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
	cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	cfg.Name, cfg.Op, cfg.Value = name, op, value
	return cfg
}

// TestGroupConfigsWire: the GROUP resource (type 32) through
// DescribeConfigs, IncrementalAlterConfigs and AlterConfigs, as franz-go's
// setShareGroupConfigs and kafka-configs.sh use it. Before groupconfig the
// facade refused the type INVALID_REQUEST.
func TestGroupConfigsWire(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)

	rr := describeGroupConfigs(t, n, c, "shares")
	if rr.ErrorCode != 0 || len(rr.Configs) != 14 {
		t.Fatalf("describe defaults: %d %v %d configs", rr.ErrorCode, rr.ErrorMessage, len(rr.Configs))
	}
	vals := configValues(rr)
	if vals["share.auto.offset.reset"] != "latest" || vals["share.record.lock.duration.ms"] != "30000" || vals["consumer.session.timeout.ms"] != "45000" {
		t.Fatalf("defaults: %v", vals)
	}
	for _, e := range rr.Configs {
		want := kmsg.ConfigSourceDefaultConfig
		if strings.HasPrefix(e.Name, "consumer.") || e.Name == "share.heartbeat.interval.ms" || e.Name == "share.session.timeout.ms" {
			want = kmsg.ConfigSourceStaticBrokerConfig // the facade's QUEEN_KAFKA_CONSUMER_GROUP_* and QUEEN_KAFKA_SHARE_GROUP_* variables
		}
		if e.Source != want || e.Documentation == nil || len(e.ConfigSynonyms) == 0 || e.ReadOnly {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}

	if r := alterGroupConfigs(t, n, c, "shares", false,
		groupOp(kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", strp("earliest")),
		groupOp(kmsg.IncrementalAlterConfigOpSet, "share.record.lock.duration.ms", strp("20000"))); r.ErrorCode != 0 {
		t.Fatalf("set: %+v", r)
	}
	rr = describeGroupConfigs(t, n, c, "shares", "share.auto.offset.reset", "share.record.lock.duration.ms")
	if got := configValues(rr); len(got) != 2 || got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "20000" {
		t.Fatalf("after set: %v", got)
	}
	if rr.Configs[0].Source != kmsg.ConfigSourceGroupConfig || rr.Configs[0].ConfigSynonyms[0].Source != kmsg.ConfigSourceGroupConfig {
		t.Errorf("an override's source is GROUP_CONFIG: %+v", rr.Configs[0])
	}
	if v, err := n.groupCfg.Get(context.Background(), c.Queen(), "shares"); err != nil || v.ShareRecordLockDuration.Milliseconds() != 20000 {
		t.Errorf("Store.Get after the alter: %+v %v", v, err)
	}

	for _, c2 := range []struct {
		cfg      kmsg.IncrementalAlterConfigsRequestResourceConfig
		validate bool
		code     int16
		msg      string
	}{
		{groupOp(kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", strp("11")), true, kerr.InvalidConfig.Code, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{groupOp(kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", strp("11")), false, kerr.InvalidConfig.Code, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{groupOp(kmsg.IncrementalAlterConfigOpAppend, "share.auto.offset.reset", strp("latest")), false, kerr.InvalidConfig.Code, "Can't APPEND to key share.auto.offset.reset because its type is not LIST."},
		{groupOp(kmsg.IncrementalAlterConfigOpSet, "no.such.config", strp("1")), false, kerr.InvalidConfig.Code, "Unknown group config name: no.such.config"},
		{groupOp(kmsg.IncrementalAlterConfigOpSet, "share.isolation.level", nil), false, kerr.InvalidRequest.Code, "Null value not supported for : share.isolation.level"},
		{groupOp(kmsg.IncrementalAlterConfigOpDelete, "share.record.lock.duration.ms", nil), true, 0, ""},
	} {
		r := alterGroupConfigs(t, n, c, "shares", c2.validate, c2.cfg)
		if r.ErrorCode != c2.code || (c2.msg != "" && (r.ErrorMessage == nil || *r.ErrorMessage != c2.msg)) {
			t.Errorf("%+v: %d %v", c2.cfg, r.ErrorCode, r.ErrorMessage)
		}
	}
	if got := configValues(describeGroupConfigs(t, n, c, "shares", "share.record.lock.duration.ms")); got["share.record.lock.duration.ms"] != "20000" {
		t.Errorf("validate_only or a refusal changed the group: %v", got)
	}
	if r := alterGroupConfigs(t, n, c, "shares", false, groupOp(kmsg.IncrementalAlterConfigOpDelete, "share.record.lock.duration.ms", nil)); r.ErrorCode != 0 {
		t.Fatalf("delete: %+v", r)
	}
	rr = describeGroupConfigs(t, n, c, "shares", "share.record.lock.duration.ms")
	if rr.Configs[0].Source != kmsg.ConfigSourceDefaultConfig || *rr.Configs[0].Value != "30000" {
		t.Errorf("after delete: %+v", rr.Configs[0])
	}

	// The legacy AlterConfigs replaces the group's overrides whole.
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "shares"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.isolation.level", Value: strp("read_committed")}}
	req.Resources = append(req.Resources, r)
	if resp := call[*kmsg.AlterConfigsResponse](t, n, c, req); resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("legacy: %+v", resp.Resources[0])
	}
	got := configValues(describeGroupConfigs(t, n, c, "shares"))
	if got["share.isolation.level"] != "read_committed" || got["share.auto.offset.reset"] != "latest" {
		t.Errorf("legacy is a full replacement: %v", got)
	}
	if rr := describeGroupConfigs(t, n, c, ""); rr.ErrorCode != kerr.InvalidRequest.Code {
		t.Errorf("the empty group: %+v", rr)
	}
}

// TestClusterGroupConfigVisibleAtAnotherNode: a value set through one node
// is described, at once, by another (franz-go polls DescribeConfigs until
// it is).
func TestClusterGroupConfigVisibleAtAnotherNode(t *testing.T) {
	_, url := newDevQueen(t)
	n1, n2 := joinedNode(t, url, 1), joinedNode(t, url, 2)
	waitView(t, []int32{1, 2}, n1, n2)
	c1, c2 := testConn(t, n1), testConn(t, n2)
	if r := alterGroupConfigs(t, n1, c1, "queue-1", false, groupOp(kmsg.IncrementalAlterConfigOpSet, "share.auto.offset.reset", strp("earliest"))); r.ErrorCode != 0 {
		t.Fatalf("set at node 1: %+v", r)
	}
	if got := configValues(describeGroupConfigs(t, n2, c2, "queue-1", "share.auto.offset.reset")); got["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("node 2 describes %v", got)
	}
	// Both nodes alter the group; neither change is lost.
	if r := alterGroupConfigs(t, n2, c2, "queue-1", false, groupOp(kmsg.IncrementalAlterConfigOpSet, "share.delivery.count.limit", strp("3"))); r.ErrorCode != 0 {
		t.Fatalf("set at node 2: %+v", r)
	}
	got := configValues(describeGroupConfigs(t, n1, c1, "queue-1"))
	if got["share.auto.offset.reset"] != "earliest" || got["share.delivery.count.limit"] != "3" {
		t.Fatalf("node 1 describes %v", got)
	}
}

// TestShareGroupOffsetsWire: AlterShareGroupOffsets, DescribeShareGroupOffsets
// (explicit topics and all, v0 and v1's lag) and DeleteShareGroupOffsets
// through the version table, as franz-go's TestShareGroupOffsetsAdmin
// sends them, and the refusal of a group with members.
func TestShareGroupOffsetsWire(t *testing.T) {
	n, _ := newTestNode(t, nil)
	c := testConn(t, n)
	ctx := context.Background()
	createTopics(t, n, c, 5, false, createSpec{"jobs", 1, 1, nil})
	var items []queen.PushItem
	for range 20 {
		items = append(items, queen.PushItem{Queue: "jobs", Partition: "0", Payload: json.RawMessage(`{}`)})
	}
	if _, err := n.queen.Push(ctx, items); err != nil {
		t.Fatal(err)
	}

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = "workers"
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "jobs"
	ap := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	ap.Partition, ap.StartOffset = 0, 8
	at.Partitions = append(at.Partitions, ap)
	alter.Topics = append(alter.Topics, at)
	ar := call[*kmsg.AlterShareGroupOffsetsResponse](t, n, c, alter)
	if ar.ErrorCode != 0 || len(ar.Topics) != 1 || ar.Topics[0].Partitions[0].ErrorCode != 0 || ar.Topics[0].TopicID == ([16]byte{}) {
		t.Fatalf("alter: %+v", ar)
	}

	describe := func(version int16, all bool) kmsg.DescribeShareGroupOffsetsResponseGroupTopicPartition {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		req.Version = version
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = "workers"
		if !all {
			gt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			gt.Topic, gt.Partitions = "jobs", []int32{0}
			g.Topics = append(g.Topics, gt)
		}
		req.Groups = append(req.Groups, g)
		resp := call[*kmsg.DescribeShareGroupOffsetsResponse](t, n, c, req)
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 || len(resp.Groups[0].Topics[0].Partitions) != 1 {
			t.Fatalf("describe v%d all=%v: %+v", version, all, resp)
		}
		return resp.Groups[0].Topics[0].Partitions[0]
	}
	for _, all := range []bool{false, true} {
		if p := describe(1, all); p.StartOffset != 8 || p.Lag != 12 {
			t.Errorf("v1 all=%v: %+v", all, p)
		}
	}
	if p := describe(0, false); p.StartOffset != 8 {
		t.Errorf("v0: %+v", p)
	}

	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = "workers"
	dt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
	dt.Topic = "jobs"
	del.Topics = append(del.Topics, dt)
	if dr := call[*kmsg.DeleteShareGroupOffsetsResponse](t, n, c, del); dr.ErrorCode != 0 || len(dr.Topics) != 1 || dr.Topics[0].ErrorCode != 0 {
		t.Fatalf("delete: %+v", dr)
	}
	if p := describe(1, false); p.StartOffset != -1 || p.Lag != -1 {
		t.Errorf("after delete: %+v", p)
	}
	if dr := call[*kmsg.DeleteShareGroupOffsetsResponse](t, n, c, del); dr.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("delete of a group with neither members nor state: %+v", dr)
	}

	// A group with a member (joined through sharegroup, the real State) is
	// refused both writes.
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.Version = 1
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "workers", "m-1-0123456789abcdef", 0, []string{"jobs"}
	if r := n.shares.Heartbeat(ctx, sharegroup.Client{ID: "t", Identity: c.Identity(), KV: c.Queen(), Topics: n.cats.Topics(callerOf(c))}, hb); r.ErrorCode != 0 {
		t.Fatalf("join: %+v", r)
	}
	if ar := call[*kmsg.AlterShareGroupOffsetsResponse](t, n, c, alter); ar.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("alter of a group with a member: %+v", ar)
	}
	if dr := call[*kmsg.DeleteShareGroupOffsetsResponse](t, n, c, del); dr.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Errorf("delete of a group with a member: %+v", dr)
	}
}

// TestClusterShareGroupOffsetsOnTheCoordinator: the share offsets APIs are
// answered by the group's rendezvous owner alone, NOT_COORDINATOR
// elsewhere, as Kafka's group coordinator does.
func TestClusterShareGroupOffsetsOnTheCoordinator(t *testing.T) {
	_, url := newDevQueen(t)
	n1, n2 := joinedNode(t, url, 1), joinedNode(t, url, 2)
	waitView(t, []int32{1, 2}, n1, n2)
	group := groupOwnedBy(t, []int32{1, 2}, 1, "workers")
	c1, c2 := testConn(t, n1), testConn(t, n2)
	createTopics(t, n1, c1, 5, false, createSpec{"jobs", 2, 1, nil})

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = "jobs"
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 1, StartOffset: 0}}
	alter.Topics = append(alter.Topics, at)
	if ar := call[*kmsg.AlterShareGroupOffsetsResponse](t, n2, c2, alter); ar.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("alter off the coordinator: %+v", ar)
	}
	if ar := call[*kmsg.AlterShareGroupOffsetsResponse](t, n1, c1, alter); ar.ErrorCode != 0 || ar.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter on the coordinator: %+v", ar)
	}
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	req.Version = 1
	req.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: group}}
	if resp := call[*kmsg.DescribeShareGroupOffsetsResponse](t, n2, c2, req); resp.Groups[0].ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("describe off the coordinator: %+v", resp)
	}
	if resp := call[*kmsg.DescribeShareGroupOffsetsResponse](t, n1, c1, req); resp.Groups[0].ErrorCode != 0 || len(resp.Groups[0].Topics) != 1 || resp.Groups[0].Topics[0].Partitions[0].StartOffset != 0 {
		t.Fatalf("describe on the coordinator: %+v", resp)
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: "jobs"}}
	if dr := call[*kmsg.DeleteShareGroupOffsetsResponse](t, n2, c2, del); dr.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("delete off the coordinator: %+v", dr)
	}
}
