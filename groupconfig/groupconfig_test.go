package groupconfig

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/sharepartition"
)

func set(name, value string) Op {
	return Op{Name: name, Kind: kmsg.IncrementalAlterConfigOpSet, Value: &value}
}

func del(name string) Op { return Op{Name: name, Kind: kmsg.IncrementalAlterConfigOpDelete} }

func TestDescribeDefaults(t *testing.T) {
	entries := KafkaBroker().Entries(nil, nil, true, true)
	if len(entries) != len(defs) {
		t.Fatalf("%d entries, want every config (%d)", len(entries), len(defs))
	}
	want := map[string]string{
		ConsumerSessionTimeout: "45000", ConsumerHeartbeatInterval: "5000", ShareSessionTimeout: "45000",
		ShareHeartbeatInterval: "5000", ShareRecordLockDuration: "30000", ShareDeliveryCountLimit: "5",
		SharePartitionMaxRecordLocks: "2000", ShareAutoOffsetReset: "latest", ShareIsolationLevel: "read_uncommitted",
		ShareRenewAcknowledgeEnable: "true", StreamsSessionTimeout: "45000", StreamsHeartbeatInterval: "5000",
		StreamsNumStandbyReplicas: "0", StreamsInitialRebalanceDelay: "3000",
	}
	for i, e := range entries {
		if i > 0 && entries[i-1].Name >= e.Name {
			t.Errorf("entries not sorted at %s", e.Name)
		}
		if e.Value == nil || *e.Value != want[e.Name] {
			t.Errorf("%s = %v, want %s", e.Name, e.Value, want[e.Name])
		}
		if e.Source != kmsg.ConfigSourceDefaultConfig || !e.IsDefault || e.ReadOnly || e.Documentation == nil {
			t.Errorf("%s: source %v default %v readonly %v doc %v", e.Name, e.Source, e.IsDefault, e.ReadOnly, e.Documentation)
		}
		if len(e.ConfigSynonyms) != 1 {
			t.Errorf("%s: synonyms %+v", e.Name, e.ConfigSynonyms)
		}
	}
	d, _ := lookup(ShareRecordLockDuration)
	if got := entries[indexOf(entries, d.name)].ConfigSynonyms[0].Name; got != "group.share.record.lock.duration.ms" {
		t.Errorf("lock duration synonym %s", got)
	}
	if got := entries[indexOf(entries, ShareAutoOffsetReset)].ConfigSynonyms[0].Name; got != ShareAutoOffsetReset {
		t.Errorf("share.auto.offset.reset has no broker config, its synonym is itself: %s", got)
	}
	// Selected names only, no synonyms or docs when not asked.
	some := KafkaBroker().Entries(map[string]string{ShareAutoOffsetReset: "earliest"}, []string{ShareAutoOffsetReset, "no.such"}, false, false)
	if len(some) != 1 || *some[0].Value != "earliest" || some[0].Source != kmsg.ConfigSourceGroupConfig || some[0].IsDefault || some[0].ConfigSynonyms != nil || some[0].Documentation != nil {
		t.Errorf("selected: %+v", some)
	}
	// A static broker setting shows as such, Kafka's default behind it.
	b := KafkaBroker().WithStatic(ConsumerSessionTimeout, 50000)
	e := b.Entries(nil, []string{ConsumerSessionTimeout}, true, false)[0]
	if *e.Value != "50000" || e.Source != kmsg.ConfigSourceStaticBrokerConfig || len(e.ConfigSynonyms) != 2 || *e.ConfigSynonyms[1].Value != "45000" {
		t.Errorf("static: %+v", e)
	}
}

func indexOf(es []kmsg.DescribeConfigsResponseResourceConfig, name string) int {
	for i, e := range es {
		if e.Name == name {
			return i
		}
	}
	return -1
}

func TestValidateMessages(t *testing.T) {
	b := KafkaBroker()
	for _, c := range []struct {
		o    map[string]string
		want string
	}{
		{map[string]string{"no.such": "1"}, "Unknown group config name: no.such"},
		{map[string]string{ConsumerSessionTimeout: "abc"}, "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"},
		{map[string]string{ConsumerSessionTimeout: "0"}, "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{map[string]string{ShareRecordLockDuration: "999"}, "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{map[string]string{ShareRecordLockDuration: "1000"}, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{ShareRecordLockDuration: "60001"}, "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"},
		{map[string]string{ShareDeliveryCountLimit: "11"}, "share.delivery.count.limit must be less than or equal to group.share.max.delivery.count.limit"},
		{map[string]string{ShareDeliveryCountLimit: "1"}, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{map[string]string{ConsumerHeartbeatInterval: "16000"}, "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"},
		{map[string]string{ShareIsolationLevel: "READ_COMMITTED"}, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{map[string]string{ShareRenewAcknowledgeEnable: "yes"}, "Invalid value yes for configuration share.renew.acknowledge.enable: Expected value to be either true or false"},
		{map[string]string{ShareAutoOffsetReset: "sometimes"}, "Invalid value sometimes for configuration share.auto.offset.reset: Invalid value `sometimes` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{map[string]string{ShareAutoOffsetReset: "by_duration:-PT1H"}, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."},
		{map[string]string{StreamsNumStandbyReplicas: "3"}, "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"},
	} {
		err := b.Validate(c.o)
		if err == nil || err.Error() != c.want {
			t.Errorf("%v: %v\nwant %s", c.o, err, c.want)
		}
	}
	// The session must exceed the heartbeat, with widened bounds that let
	// them meet.
	wide := b.WithStatic(ConsumerHeartbeatInterval, 1000).WithStatic(ConsumerSessionTimeout, 2000)
	if err := wide.Validate(map[string]string{ConsumerHeartbeatInterval: "2000"}); err == nil || err.Error() != "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms" {
		t.Errorf("session vs heartbeat: %v", err)
	}
	for _, ok := range []map[string]string{
		nil,
		{ShareAutoOffsetReset: "earliest"}, {ShareAutoOffsetReset: "EARLIEST"}, {ShareAutoOffsetReset: "by_duration:PT1H"},
		{ShareAutoOffsetReset: " latest "}, {ShareRecordLockDuration: "15000"}, {ShareDeliveryCountLimit: "10"},
		{ShareIsolationLevel: "read_committed"}, {ShareRenewAcknowledgeEnable: "FALSE"}, {ConsumerSessionTimeout: " 60000"},
	} {
		if err := b.Validate(ok); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}

func TestValues(t *testing.T) {
	v := KafkaBroker().Values(map[string]string{
		ShareAutoOffsetReset: "by_duration:PT2M", ShareRecordLockDuration: "20000", ShareDeliveryCountLimit: "3",
		ShareIsolationLevel: "read_committed", ShareRenewAcknowledgeEnable: "false",
		// Stored under wider bounds than today's: capped, as Kafka 4.2 does.
		ConsumerSessionTimeout: "90000",
	})
	want := sharepartition.Config{LockDuration: 20 * time.Second, DeliveryLimit: 3, MaxLocks: 2000}
	if v.Share() != want {
		t.Errorf("share config %+v", v.Share())
	}
	if v.ShareAutoOffsetReset != (sharepartition.Reset{Kind: sharepartition.ResetByDuration, Duration: 2 * time.Minute}) {
		t.Errorf("reset %+v", v.ShareAutoOffsetReset)
	}
	if !v.ShareReadCommitted || v.ShareRenewAcknowledgeEnable || v.ConsumerSessionTimeout != 60*time.Second || v.ShareSessionTimeout != 45*time.Second {
		t.Errorf("values %+v", v)
	}
	d := KafkaBroker().Values(nil)
	if d.Share() != sharepartition.DefaultConfig() || d.ShareAutoOffsetReset.Kind != sharepartition.ResetLatest || d.ShareReadCommitted || !d.ShareRenewAcknowledgeEnable {
		t.Errorf("defaults %+v", d)
	}
}

func TestAlterWritesAndDeletes(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	s := New(Config{})
	if out := s.Alter(ctx, kv, "g", []Op{set(ShareAutoOffsetReset, "EARLIEST"), set(ShareRecordLockDuration, " 20000")}, ApplyIncremental, false); out.Code != 0 {
		t.Fatalf("alter: %+v", out)
	}
	raw, _, ok := kv.Row(queen.GroupCfgKey("g"))
	if !ok || string(raw) != `{"v":1,"c":{"share.auto.offset.reset":"EARLIEST","share.record.lock.duration.ms":"20000"}}` {
		t.Fatalf("row %s", raw)
	}
	// validate_only writes nothing, and refuses what an alter refuses.
	if out := s.Alter(ctx, kv, "g", []Op{del(ShareAutoOffsetReset)}, ApplyIncremental, true); out.Code != 0 {
		t.Fatalf("validate only: %+v", out)
	}
	if out := s.Alter(ctx, kv, "g", []Op{set(ShareDeliveryCountLimit, "99")}, ApplyIncremental, true); out.Code != kerr.InvalidConfig.Code {
		t.Fatalf("validate only of a bad value: %+v", out)
	}
	if o, _ := s.Overrides(ctx, kv, "g"); len(o) != 2 {
		t.Fatalf("validate_only changed the row: %v", o)
	}
	// The legacy form replaces the set whole.
	if out := s.Alter(ctx, kv, "g", LegacyOps([]kmsg.AlterConfigsRequestResourceConfig{{Name: ShareIsolationLevel, Value: kmsg.StringPtr("read_committed")}}), ApplyLegacy, false); out.Code != 0 {
		t.Fatalf("legacy: %+v", out)
	}
	if o, _ := s.Overrides(ctx, kv, "g"); !maps.Equal(o, map[string]string{ShareIsolationLevel: "read_committed"}) {
		t.Fatalf("legacy left %v", o)
	}
	// Deleting the last override deletes the row; deleting a name never set
	// (even one Kafka does not define) changes nothing, as in Kafka, which
	// validates only the names left.
	if out := s.Alter(ctx, kv, "g", []Op{del(ShareIsolationLevel), del("never.set.either")}, ApplyIncremental, false); out.Code != 0 {
		t.Fatalf("delete: %+v", out)
	}
	if _, _, ok := kv.Row(queen.GroupCfgKey("g")); ok {
		t.Fatal("an empty override set left its row")
	}
	if out := s.Alter(ctx, kv, "", []Op{set(ShareAutoOffsetReset, "earliest")}, ApplyIncremental, false); out.Code != kerr.InvalidRequest.Code {
		t.Fatalf("empty group: %+v", out)
	}
}

// Two nodes altering one group at once: the one that loses its
// compare-and-set re-applies its operations to the winner's row.
func TestAlterConcurrentNodesLoseNothing(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	a, b := New(Config{}), New(Config{})
	kv.BeforeNextPut(func() {
		if out := b.Alter(ctx, kv, "g", []Op{set(ShareDeliveryCountLimit, "7")}, ApplyIncremental, false); out.Code != 0 {
			t.Errorf("b: %+v", out)
		}
	})
	if out := a.Alter(ctx, kv, "g", []Op{set(ShareAutoOffsetReset, "earliest")}, ApplyIncremental, false); out.Code != 0 {
		t.Fatalf("a: %+v", out)
	}
	o, _ := a.Overrides(ctx, kv, "g")
	if !maps.Equal(o, map[string]string{ShareAutoOffsetReset: "earliest", ShareDeliveryCountLimit: "7"}) {
		t.Fatalf("after the race: %v", o)
	}
}

func TestGetCacheAndOtherNode(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New()
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	a, b := New(Config{Now: clock}), New(Config{Now: clock})
	if v, err := a.Get(ctx, kv, "g"); err != nil || v.ShareAutoOffsetReset.Kind != sharepartition.ResetLatest {
		t.Fatalf("get: %+v %v", v, err)
	}
	if out := b.Alter(ctx, kv, "g", []Op{set(ShareAutoOffsetReset, "earliest")}, ApplyIncremental, false); out.Code != 0 {
		t.Fatal(out)
	}
	if v, _ := b.Get(ctx, kv, "g"); v.ShareAutoOffsetReset.Kind != sharepartition.ResetEarliest {
		t.Error("the altering node must see its alter at once")
	}
	if v, _ := a.Get(ctx, kv, "g"); v.ShareAutoOffsetReset.Kind != sharepartition.ResetLatest {
		t.Error("another node answers from its cache within the TTL")
	}
	now = now.Add(DefaultTTL)
	if v, _ := a.Get(ctx, kv, "g"); v.ShareAutoOffsetReset.Kind != sharepartition.ResetEarliest {
		t.Error("past the TTL another node reads the row")
	}
	if cfg, reset, err := a.Share(ctx, kv, "g"); err != nil || cfg != sharepartition.DefaultConfig() || reset.Kind != sharepartition.ResetEarliest {
		t.Errorf("Share: %+v %+v %v", cfg, reset, err)
	}
	// Describe reads afresh at any node.
	rr := kmsg.NewDescribeConfigsResponseResource()
	a.Describe(ctx, kv, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g", ConfigNames: []string{ShareAutoOffsetReset}}, false, false, &rr)
	if rr.ErrorCode != 0 || len(rr.Configs) != 1 || *rr.Configs[0].Value != "earliest" {
		t.Fatalf("describe %+v", rr)
	}
	rr = kmsg.NewDescribeConfigsResponseResource()
	a.Describe(ctx, kv, kmsg.DescribeConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeGroupConfig}, false, false, &rr)
	if rr.ErrorCode != kerr.InvalidRequest.Code || !strings.Contains(*rr.ErrorMessage, "must not be empty") {
		t.Fatalf("empty group describe %+v", rr)
	}
	// A row this package cannot read is a Queen protocol fault, not defaults.
	kv.KV(ctx, []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: queen.GroupCfgKey("bad"), Value: json.RawMessage(`{"v":9,"c":{}}`), Forever: true}})
	if _, err := a.Get(ctx, kv, "bad"); err == nil {
		t.Fatal("a row of an unknown version read as defaults")
	}
}

func FuzzRowDecode(f *testing.F) {
	f.Add([]byte(`{"v":1,"c":{"share.auto.offset.reset":"earliest"}}`))
	f.Add([]byte(`{"v":1,"c":{}}`))
	f.Add([]byte(`{"v":2,"c":{"a":"b"}}`))
	f.Add([]byte(`{"v":1,"c":{"x":1}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeRow(b)
		if err != nil {
			return
		}
		back, err := decodeRow(encodeRow(o))
		if err != nil || !maps.Equal(o, back) {
			t.Fatalf("%q decoded to %v, which re-encodes to %v (%v)", b, o, back, err)
		}
		// Whatever a row holds, the effective values are within bounds.
		v := KafkaBroker().Values(o)
		if v.ShareDeliveryCountLimit < 2 || v.ShareDeliveryCountLimit > 10 || v.ShareRecordLockDuration < 15*time.Second || v.ShareRecordLockDuration > time.Minute {
			t.Fatalf("%q: values out of bounds %+v", b, v)
		}
	})
}
