package catalogue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AlterTopicConfig is the alter AlterConfigs and IncrementalAlterConfigs
// share for topic name, for c, its record stamped at: change applied to the
// topic's configs and, unless validateOnly, written. Queen's configure
// route is a whole-row upsert (on older brokers) whose options cannot be
// read back, so an alter of retention is lossless only on a topic whose
// complete bag the facade itself posted: those are the only ones whose
// retention is altered, and the COMPLETE bag is posted again with the
// change, retentionEnabled stated explicitly. The facade's own keys
// (compression.type, max.message.bytes) touch no queue option, so they are
// altered on every topic, in its record alone. A refusal is code and msg;
// a failed Queen call is err, for the caller to map; next is the record
// written (nil when nothing was).
func (cs *Catalogues) AlterTopicConfig(ctx context.Context, c Caller, name string, validateOnly bool, at time.Time, change func(*TopicConfig) error) (code int16, msg string, next *Record, err error) {
	unknown := "This server does not host this topic-partition."
	if TopicNameError(name) != "" || InternalTopic(name) {
		return kerr.UnknownTopicOrPartition.Code, unknown, nil, nil
	}
	cat := cs.For(c)
	if err := cat.Ensure(ctx, c, true); err != nil {
		return 0, "", nil, err
	}
	info, ok := cat.Lookup(name)
	if !ok {
		return kerr.UnknownTopicOrPartition.Code, unknown, nil, nil
	}
	q := c.Queen
	rec, version, err := ReadRecord(ctx, q, name)
	if err != nil {
		return 0, "", nil, err
	}
	owned := FacadeCreated(rec, info)
	if !owned && rec != nil && !rec.Matches(info.QueueID()) {
		rec = nil // another queue's leftover: overwritten, not inherited
	}
	k := TopicConfigOf(rec)
	before := k.Retention()
	err = change(&k)
	if err == nil {
		err = k.checkCompactionLags()
	}
	if err != nil {
		return kerr.InvalidConfig.Code, err.Error(), nil, nil
	}
	retained := k.Retention() == before
	if !owned && !retained {
		return kerr.PolicyViolation.Code, fmt.Sprintf("Topic %s was not created by CreateTopics through this facade (it was created natively, or on first use by Metadata), so its queue options cannot be read back and an alter of its retention here could not be lossless; change its retention through Queen's queue options instead (compression.type, max.message.bytes and the configs stored but not applied can be altered here).", name), nil, nil
	}
	if validateOnly {
		return 0, "", nil, nil
	}
	next = &Record{QID: info.QID(), At: at.UnixMilli(), Kafka: k.KafkaMap()}
	if rec != nil {
		next.Set, next.Partitions = rec.Set, rec.Partitions
		if next.QID == nil {
			next.QID = rec.QID
		}
	}
	if owned && !retained {
		bag := maps.Clone(rec.Set)
		maps.Copy(bag, k.RetentionBag())
		if _, err := q.Configure(ctx, name, bag); err != nil {
			return 0, "", nil, err
		}
		next.Set = bag
	}
	applied, _, err := WriteRecord(ctx, q, name, next, version)
	if err != nil {
		return 0, "", nil, err
	}
	if !applied {
		// Another alter landed between our read and write; its bag is the
		// one on record, ours is on the queue. Tell the client to retry so
		// the two agree again.
		return kerr.RequestTimedOut.Code, fmt.Sprintf("Topic %s was altered concurrently; retry.", name), nil, nil
	}
	cat.SetRecord(name, next)
	return 0, "", next, nil
}

// FacadeCreated reports whether rec is a configure bag this facade posted
// for the live queue of info: the only topics whose retention it can read
// back, and so the only ones it describes or alters.
func FacadeCreated(rec *Record, info Topic) bool {
	return rec != nil && rec.Set != nil && rec.Matches(info.QueueID())
}

// ApplyCreate applies a CreateTopics request's configs to k. A null value
// is passed over, as before names were checked.
func (k *TopicConfig) ApplyCreate(cfgs []kmsg.CreateTopicsRequestTopicConfig) error {
	for _, cfg := range cfgs {
		if cfg.Value == nil {
			continue
		}
		if err := k.Set(cfg.Name, *cfg.Value); err != nil {
			return err
		}
	}
	return k.checkCompactionLags()
}

// Replace is the legacy AlterConfigs' full replacement: a key cfgs does
// not name returns to its default (a null value was refused before).
func (k *TopicConfig) Replace(cfgs []kmsg.AlterConfigsRequestResourceConfig) error {
	*k = DefaultTopicConfig()
	for _, cfg := range cfgs {
		if cfg.Value == nil {
			return fmt.Errorf("Null value not supported for topic configs: %s", cfg.Name)
		}
		if err := k.Set(cfg.Name, *cfg.Value); err != nil {
			return err
		}
	}
	return nil
}

// ApplyIncremental applies one IncrementalAlterConfigs config to k, as
// `kafka-configs.sh --alter` sends them: SET and DELETE on every key Kafka
// knows (DELETE of a name it does not know removes nothing, as Kafka's),
// APPEND and SUBTRACT on the list-typed ones.
func (k *TopicConfig) ApplyIncremental(cfg kmsg.IncrementalAlterConfigsRequestResourceConfig) error {
	value := ""
	if cfg.Value != nil {
		value = *cfg.Value
	}
	switch cfg.Op {
	case kmsg.IncrementalAlterConfigOpSet:
		if cfg.Value == nil {
			return fmt.Errorf("Null value not supported for : %s", cfg.Name)
		}
		return k.Set(cfg.Name, value)
	case kmsg.IncrementalAlterConfigOpDelete:
		k.Reset(cfg.Name)
		return nil
	case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
		if sk, ok := storedKeys[cfg.Name]; ok && sk.typ == kmsg.ConfigTypeList {
			return k.Set(cfg.Name, alterList(listItems(k.Value(cfg.Name)), value, cfg.Op == kmsg.IncrementalAlterConfigOpAppend))
		}
		if cfg.Name != CleanupPolicy {
			verb := "append"
			if cfg.Op == kmsg.IncrementalAlterConfigOpSubtract {
				verb = "subtract"
			}
			return fmt.Errorf("Config value %s is not allowed for config key: %s", verb, cfg.Name)
		}
		items := map[string]bool{}
		for _, p := range strings.Split(k.Policy(), ",") {
			items[p] = true
		}
		for _, v := range strings.Split(value, ",") {
			v = strings.ToLower(strings.TrimSpace(v))
			if v == "" {
				continue
			}
			items[v] = cfg.Op == kmsg.IncrementalAlterConfigOpAppend
		}
		var list []string
		for p, on := range items {
			if on {
				list = append(list, p)
			}
		}
		if len(list) == 0 {
			return fmt.Errorf("Invalid value for configuration cleanup.policy: removing %s would leave it empty", value)
		}
		return k.Set(CleanupPolicy, strings.Join(list, ","))
	}
	return fmt.Errorf("Unknown alter config operation %d for %s", cfg.Op, cfg.Name)
}

// alterList is Kafka's APPEND (values not yet listed, at the end) or
// SUBTRACT (every listed value named) of a comma-separated value.
func alterList(items []string, value string, appendOp bool) string {
	for _, v := range strings.Split(value, ",") {
		switch {
		case appendOp && !slices.Contains(items, v):
			items = append(items, v)
		case !appendOp:
			items = slices.DeleteFunc(items, func(it string) bool { return it == v })
		}
	}
	return strings.Join(items, ",")
}
