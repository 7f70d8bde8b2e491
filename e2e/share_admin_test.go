package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestor is a client (kgo routes each request as it would) or a broker
// pinned to one node.
type requestor interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}

// TestShareAdminFranzGo drives the GROUP config resource and the share
// offsets admin APIs with franz-go, as its share tests' setShareGroupConfigs
// and TestShareGroupOffsetsAdmin do, against one facade and a 3-node
// cluster: kgo routes the offsets APIs to the group's coordinator through
// FindCoordinator, and every node describes a value set through any.
func TestShareAdminFranzGo(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		dev, fac := sharedEnv(t)
		tg := target{bootstrap: []string{fac.addr}, dev: dev}
		shareAdminBody(t, tg, []requestor{newKgo(t, tg.bootstrap)})
	})
	t.Run("cluster", func(t *testing.T) {
		c := newTestCluster(t, clusterOpts{nodes: 3})
		shareAdminBody(t, c.target(), []requestor{c.pin(t, 1), c.pin(t, 2), c.pin(t, 3)})
	})
}

func shareAdminBody(t *testing.T, tg target, describers []requestor) {
	topic, group := uniq("share-admin"), uniq("g-share-admin")
	createTopic(t, tg, topic, 1, nil)
	produceRound(t, tg, topic, 1, 20, "r", 0)
	cl := newKgo(t, tg.bootstrap, kgo.RetryTimeout(20*time.Second))
	ctx := ctxT(t, 60*time.Second)

	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	for _, kv := range [][2]string{{"share.auto.offset.reset", "earliest"}, {"share.record.lock.duration.ms", "20000"}} {
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = kv[0], kmsg.StringPtr(kv[1])
		res.Configs = append(res.Configs, cfg)
	}
	inc.Resources = append(inc.Resources, res)
	iresp, err := inc.RequestWith(ctx, cl)
	if err != nil || iresp.Resources[0].ErrorCode != 0 {
		t.Fatalf("IncrementalAlterConfigs: %v %+v", err, iresp)
	}
	for i, d := range describers {
		dreq := kmsg.NewPtrDescribeConfigsRequest()
		dres := kmsg.NewDescribeConfigsRequestResource()
		dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
		dres.ConfigNames = []string{"share.auto.offset.reset", "share.record.lock.duration.ms"}
		dreq.Resources = append(dreq.Resources, dres)
		raw, err := d.Request(ctx, dreq)
		if err != nil {
			t.Fatalf("DescribeConfigs at %d: %v", i, err)
		}
		r := raw.(*kmsg.DescribeConfigsResponse).Resources[0]
		got := map[string]string{}
		for _, c := range r.Configs {
			got[c.Name] = *c.Value
		}
		if r.ErrorCode != 0 || got["share.auto.offset.reset"] != "earliest" || got["share.record.lock.duration.ms"] != "20000" {
			t.Fatalf("DescribeConfigs at %d: %d %v", i, r.ErrorCode, got)
		}
	}

	alter := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	alter.GroupID = group
	at := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	at.Topic = topic
	at.Partitions = []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 8}}
	alter.Topics = append(alter.Topics, at)
	aresp, err := alter.RequestWith(ctx, cl)
	if err != nil || aresp.ErrorCode != 0 || len(aresp.Topics) != 1 || aresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("AlterShareGroupOffsets: %v %+v", err, aresp)
	}
	describe := func(all bool) (int64, int64) {
		t.Helper()
		req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
		g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
		g.GroupID = group
		if !all {
			g.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{{Topic: topic, Partitions: []int32{0}}}
		}
		req.Groups = append(req.Groups, g)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			t.Fatalf("DescribeShareGroupOffsets(all=%v): %v %+v", all, err, resp)
		}
		for _, rt := range resp.Groups[0].Topics {
			for _, rp := range rt.Partitions {
				if rt.Topic == topic && rp.Partition == 0 && rp.ErrorCode == 0 {
					return rp.StartOffset, rp.Lag
				}
			}
		}
		t.Fatalf("DescribeShareGroupOffsets(all=%v): partition 0 missing: %+v", all, resp.Groups[0])
		return 0, 0
	}
	for _, all := range []bool{false, true} {
		if spso, lag := describe(all); spso != 8 || lag != 12 {
			t.Errorf("describe(all=%v): start offset %d lag %d, want 8 and 12", all, spso, lag)
		}
	}
	del := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	del.GroupID = group
	del.Topics = []kmsg.DeleteShareGroupOffsetsRequestTopic{{Topic: topic}}
	dresp, err := del.RequestWith(ctx, cl)
	if err != nil || dresp.ErrorCode != 0 || len(dresp.Topics) != 1 || dresp.Topics[0].ErrorCode != 0 {
		t.Fatalf("DeleteShareGroupOffsets: %v %+v", err, dresp)
	}
	if spso, _ := describe(false); spso != -1 {
		t.Errorf("after delete: start offset %d, want -1", spso)
	}
	if dresp, err := del.RequestWith(ctx, cl); err != nil || dresp.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("delete again: %v %+v", err, dresp)
	}
}
