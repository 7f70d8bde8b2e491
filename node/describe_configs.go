package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/configres"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/transport"
)

// handleDescribeConfigs answers truthfully and therefore briefly: a key is
// reported only where the facade can name what enforces it. For a topic
// that is compression.type and max.message.bytes (the facade applies both
// itself), and retention.ms and cleanup.policy of a topic the facade
// created (from its qk:topiccfg: record); a topic created any other way has
// no readable retention, so it answers no retention entries rather than
// defaults nothing checks; any other topic config is reported only once
// set, as stored, not applied (catalogue's storedKeys). This node's BROKER resource lists the broker
// configs the facade holds and enforces, read-only, and BROKER_LOGGER none,
// both answered by package configres as Kafka's ConfigHelper answers them,
// and a GROUP resource every group config (package groupconfig); any other
// resource type is INVALID_REQUEST.
func (n *Node) handleDescribeConfigs(ctx context.Context, c *transport.Conn, req *kmsg.DescribeConfigsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	cat := n.cats.For(callerOf(c))
	var refreshed bool
	var refreshErr error
	for _, r := range req.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = r.ResourceType, r.ResourceName
		rr.Configs = []kmsg.DescribeConfigsResponseResourceConfig{}
		switch r.ResourceType {
		case kmsg.ConfigResourceTypeTopic:
			if !refreshed {
				refreshed, refreshErr = true, cat.Ensure(ctx, callerOf(c), false)
			}
			n.describeTopic(ctx, c, cat, refreshErr, req, r, &rr, resp)
		case kmsg.ConfigResourceTypeBroker:
			configres.DescribeBroker(r, n.topo.SelfID(), n.cfg, req.IncludeSynonyms, req.IncludeDocumentation, &rr)
		case kmsg.ConfigResourceTypeBrokerLogger:
			configres.DescribeBrokerLogger(r, n.topo.SelfID(), &rr)
		case kmsg.ConfigResourceTypeGroupConfig:
			resp.ThrottleMillis = max(resp.ThrottleMillis, n.groupCfg.Describe(ctx, c.Queen(), r, req.IncludeSynonyms, req.IncludeDocumentation, &rr))
		default:
			setDescribeError(&rr, kerr.InvalidRequest.Code, fmt.Sprintf("Config resource type %s is not described by this facade.", r.ResourceType))
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return resp, nil
}

func (n *Node) describeTopic(ctx context.Context, c *transport.Conn, cat *catalogue.Catalogue, refreshErr error, req *kmsg.DescribeConfigsRequest, r kmsg.DescribeConfigsRequestResource, rr *kmsg.DescribeConfigsResponseResource, resp *kmsg.DescribeConfigsResponse) {
	name := r.ResourceName
	if catalogue.TopicNameError(name) != "" || catalogue.InternalTopic(name) {
		setDescribeError(rr, kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition.")
		return
	}
	if refreshErr != nil && !cat.Loaded() {
		code, throttle, msg := faults.Topic(refreshErr)
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		setDescribeError(rr, code, msg)
		return
	}
	info, ok := cat.Lookup(name)
	if !ok && cat.Ensure(ctx, callerOf(c), true) == nil {
		// An admin asking about a topic created a moment ago, natively or
		// through another node, gets the fresh answer, not the cached one.
		info, ok = cat.Lookup(name)
	}
	if !ok {
		setDescribeError(rr, kerr.UnknownTopicOrPartition.Code, "This server does not host this topic-partition.")
		return
	}
	// The record is read afresh: an alter on another node must show.
	rec, _, err := catalogue.ReadRecord(ctx, c.Queen(), name)
	if err != nil {
		code, throttle, msg := faults.Topic(err)
		resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
		setDescribeError(rr, code, msg)
		return
	}
	keys := catalogue.TopicConfigKeys
	if !catalogue.FacadeCreated(rec, info) {
		keys = catalogue.FacadeConfigKeys
		if rec != nil && !rec.Matches(info.QueueID()) {
			rec = nil // another queue's leftover
		}
	}
	rr.Configs = catalogue.DescribeEntries(catalogue.TopicConfigOf(rec), n.cfg.FetchCompression, keys, r.ConfigNames, req.IncludeSynonyms, req.IncludeDocumentation)
}

func setDescribeError(rr *kmsg.DescribeConfigsResponseResource, code int16, msg string) {
	rr.ErrorCode = code
	rr.ErrorMessage = &msg
}
