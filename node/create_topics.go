package node

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/faults"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/topology"
	"github.com/queen-mq/queen-kafka/transport"
)

// createPlan is one topic of a CreateTopics request that passed validation.
type createPlan struct {
	idx     int   // position in the response
	version int64 // the record's version once written
	name    string
	width   int32
	rf      int16
	config  catalogue.TopicConfig
}

// handleCreateTopics creates queues. The declared width is recorded under
// qk:topiccfg:<topic> BEFORE the queue is created, so that no Metadata can
// see the queue without its floor; the configure call sends the queue and
// its retention only, and only for a queue the refreshed listing lacks.
func (n *Node) handleCreateTopics(ctx context.Context, c *transport.Conn, req *kmsg.CreateTopicsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	resp.Topics = make([]kmsg.CreateTopicsResponseTopic, len(req.Topics))
	seen := make(map[string]int, len(req.Topics))
	for _, t := range req.Topics {
		seen[t.Topic]++
	}
	var plans []createPlan
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		if seen[t.Topic] > 1 {
			setCreateError(rt, kerr.InvalidRequest.Code, fmt.Sprintf("Create topics request contains multiple entries for the topic %s", t.Topic))
			continue
		}
		plan, code, msg := n.planCreate(t)
		if code != 0 {
			setCreateError(rt, code, msg)
			continue
		}
		plan.idx = i
		plans = append(plans, plan)
	}
	if len(plans) == 0 {
		return resp, nil
	}

	cat := n.cats.For(callerOf(c))
	if err := cat.Ensure(ctx, callerOf(c), true); err != nil {
		failCreates(c, req, resp, plans, err)
		return resp, nil
	}
	var created []createPlan
	for _, p := range plans {
		rt := &resp.Topics[p.idx]
		if _, exists := cat.Lookup(p.name); exists {
			setCreateError(rt, kerr.TopicAlreadyExists.Code, fmt.Sprintf("Topic '%s' already exists.", p.name))
			continue
		}
		if !req.ValidateOnly {
			version, err := n.createTopic(ctx, c, p)
			if err != nil {
				failCreates(c, req, resp, []createPlan{p}, err)
				continue
			}
			p.version = version
			created = append(created, p)
		}
		fillCreated(rt, p, n.cfg.FetchCompression)
	}
	if len(created) > 0 {
		n.bindCreated(ctx, c, cat, created)
	}
	for _, p := range created {
		// v7: the new queue's id, from the listing bindCreated took; zero
		// (Kafka's "none") when that listing failed or lacks it.
		if id, ok := cat.TopicID(p.name); ok {
			resp.Topics[p.idx].TopicID = id
		}
	}
	return resp, nil
}

// planCreate validates one topic of the request.
func (n *Node) planCreate(t kmsg.CreateTopicsRequestTopic) (createPlan, int16, string) {
	p := createPlan{name: t.Topic, config: catalogue.DefaultTopicConfig()}
	if msg := catalogue.TopicNameError(t.Topic); msg != "" {
		return p, kerr.InvalidTopicException.Code, msg
	}
	if catalogue.InternalTopic(t.Topic) {
		return p, kerr.InvalidTopicException.Code, fmt.Sprintf("Topic name %s is reserved: names beginning with __ are Kafka's internal topics, which this facade neither lists nor creates", t.Topic)
	}
	if len(t.ReplicaAssignment) > 0 {
		// Kafka's manual assignment: its partition count is the width.
		var code int16
		var msg string
		if p.width, p.rf, code, msg = topology.ManualAssignment(t, n.topo.Brokers()); code != 0 {
			return p, code, msg
		}
		if p.width > catalogue.MaxWidth {
			return p, kerr.InvalidPartitions.Code, fmt.Sprintf("Number of partitions %d is above this facade's ceiling of %d per topic.", p.width, catalogue.MaxWidth)
		}
		return planConfigs(t, p)
	}
	switch {
	case t.NumPartitions == -1:
		p.width = n.cfg.DefaultPartitions
	case t.NumPartitions <= 0:
		return p, kerr.InvalidPartitions.Code, "Number of partitions must be larger than 0, or -1 to use the default value."
	case t.NumPartitions > catalogue.MaxWidth:
		return p, kerr.InvalidPartitions.Code, fmt.Sprintf("Number of partitions %d is above this facade's ceiling of %d per topic.", t.NumPartitions, catalogue.MaxWidth)
	default:
		p.width = t.NumPartitions
	}
	switch {
	case t.ReplicationFactor == -1:
		p.rf = int16(len(n.topo.Brokers()))
	case t.ReplicationFactor <= 0:
		return p, kerr.InvalidReplicationFactor.Code, "Replication factor must be larger than 0, or -1 to use the default value."
	default:
		// Accepted as asked: durability is Queen's, whatever the factor.
		p.rf = t.ReplicationFactor
	}
	return planConfigs(t, p)
}

// planConfigs applies the topic's configs to p.
func planConfigs(t kmsg.CreateTopicsRequestTopic, p createPlan) (createPlan, int16, string) {
	for _, cfg := range t.Configs {
		if !catalogue.KafkaTopicConfig(cfg.Name) {
			// Kafka's LogConfig.validateNames, before any value is read.
			return p, kerr.InvalidConfig.Code, "Unknown topic config name: " + cfg.Name
		}
		if cfg.Value == nil || !catalogue.SupportedTopicConfig(cfg.Name) {
			continue // accepted, not applied
		}
		if err := p.config.Set(cfg.Name, *cfg.Value); err != nil {
			return p, kerr.InvalidConfig.Code, err.Error()
		}
	}
	return p, 0, ""
}

// createTopic records the declared width, then creates the queue, and
// returns the record's version.
func (n *Node) createTopic(ctx context.Context, c *transport.Conn, p createPlan) (int64, error) {
	q := c.Queen()
	_, version, err := catalogue.ReadRecord(ctx, q, p.name)
	if err != nil {
		return 0, err
	}
	bag := n.queueOptions(p.config.RetentionBag())
	applied, version, err := catalogue.WriteRecord(ctx, q, p.name, n.newTopicRecord(p, nil), version)
	if err != nil {
		return 0, err
	}
	if !applied {
		return 0, faults.ErrTopicRace
	}
	if _, err := q.Configure(ctx, p.name, bag); err != nil {
		return 0, fmt.Errorf("create queue %s: %w", p.name, err)
	}
	c.Logger().Info("topic created", "topic", p.name, "partitions", p.width, "retention", bag, "client_id", c.ClientID())
	return version, nil
}

func (n *Node) newTopicRecord(p createPlan, qid *string) *catalogue.Record {
	return &catalogue.Record{QID: qid, Set: n.queueOptions(p.config.RetentionBag()), At: n.now().UnixMilli(), Partitions: p.width, Kafka: p.config.KafkaMap()}
}

// queueOptions is the configure bag of a queue the facade creates: opts
// plus dedupWindowSeconds = QUEEN_KAFKA_DEDUP_WINDOW_SECONDS, the window in
// which Queen answers a retried idempotent batch duplicate (seed 002; 0
// leaves Queen's own default). opts may be nil.
func (n *Node) queueOptions(opts map[string]any) map[string]any {
	if n.cfg.DedupWindowSeconds == 0 {
		return opts
	}
	if opts == nil {
		opts = make(map[string]any, 1)
	}
	opts["dedupWindowSeconds"] = n.cfg.DedupWindowSeconds
	return opts
}

// bindCreated stamps the new queues' ids into their records, so that a
// record outliving its queue (deleted natively, recreated) is recognised as
// stale. Best effort: a record without a qid still applies to its queue.
func (n *Node) bindCreated(ctx context.Context, c *transport.Conn, cat *catalogue.Catalogue, created []createPlan) {
	if err := cat.Ensure(ctx, callerOf(c), true); err != nil {
		c.Logger().Warn("created topics not re-listed", "err", err)
	}
	var ops []queen.KVOp
	for _, p := range created {
		t, ok := cat.Lookup(p.name)
		if !ok {
			cat.Added(p.name, nil)
		}
		rec := n.newTopicRecord(p, t.QID())
		cat.SetRecord(p.name, rec)
		if rec.QID == nil {
			continue // not listed yet: the record applies to it unbound
		}
		op, err := catalogue.PutRecordOp(p.name, rec, p.version)
		if err != nil {
			c.Logger().Warn("topic record not bound to its queue id", "topic", p.name, "err", err)
			continue
		}
		ops = append(ops, op)
	}
	for len(ops) > 0 {
		chunk := ops[:min(len(ops), 128)]
		ops = ops[len(chunk):]
		if _, err := c.Queen().KV(ctx, chunk); err != nil {
			c.Logger().Warn("topic records not bound to their queue ids", "err", err)
		}
	}
}

// failCreates answers plans with the mapped failure (faults.Create).
func failCreates(c *transport.Conn, req *kmsg.CreateTopicsRequest, resp *kmsg.CreateTopicsResponse, plans []createPlan, err error) {
	code, throttle, msg := faults.Create(err, req.Version)
	resp.ThrottleMillis = max(resp.ThrottleMillis, throttle)
	c.Logger().Warn("create topics failed", "err", err)
	for _, p := range plans {
		rt := &resp.Topics[p.idx]
		if code == kerr.TopicAlreadyExists.Code {
			msg = fmt.Sprintf("Topic '%s' already exists.", p.name)
		}
		setCreateError(rt, code, msg)
	}
}

func setCreateError(rt *kmsg.CreateTopicsResponseTopic, code int16, msg string) {
	rt.ErrorCode = code
	rt.ErrorMessage = &msg
}

// fillCreated reports the created topic: width, factor and the
// configs that are applied (fetchDefault: QUEEN_KAFKA_FETCH_COMPRESSION).
func fillCreated(rt *kmsg.CreateTopicsResponseTopic, p createPlan, fetchDefault int) {
	rt.NumPartitions = p.width
	rt.ReplicationFactor = p.rf
	for _, e := range catalogue.DescribeEntries(p.config, fetchDefault, catalogue.TopicConfigKeys, nil, false, false) {
		cfg := kmsg.NewCreateTopicsResponseTopicConfig()
		cfg.Name, cfg.Value, cfg.Source = e.Name, e.Value, int8(e.Source)
		rt.Configs = append(rt.Configs, cfg)
	}
}
