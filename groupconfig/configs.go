package groupconfig

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/sharepartition"
)

// The group config names of Kafka 4.2 (GroupConfig).
const (
	ConsumerSessionTimeout       = "consumer.session.timeout.ms"
	ConsumerHeartbeatInterval    = "consumer.heartbeat.interval.ms"
	ShareSessionTimeout          = "share.session.timeout.ms"
	ShareHeartbeatInterval       = "share.heartbeat.interval.ms"
	ShareRecordLockDuration      = "share.record.lock.duration.ms"
	ShareDeliveryCountLimit      = "share.delivery.count.limit"
	SharePartitionMaxRecordLocks = "share.partition.max.record.locks"
	ShareAutoOffsetReset         = "share.auto.offset.reset"
	ShareIsolationLevel          = "share.isolation.level"
	ShareRenewAcknowledgeEnable  = "share.renew.acknowledge.enable"
	StreamsSessionTimeout        = "streams.session.timeout.ms"
	StreamsHeartbeatInterval     = "streams.heartbeat.interval.ms"
	StreamsNumStandbyReplicas    = "streams.num.standby.replicas"
	StreamsInitialRebalanceDelay = "streams.initial.rebalance.delay.ms"
)

// def is one group config as GroupConfig's ConfigDef defines it.
type def struct {
	name string
	typ  kmsg.ConfigType
	// floor is the ConfigDef's atLeast for an INT (math.MinInt64: none).
	floor int64
	// dflt is GroupConfig's own default, for a config with no broker
	// setting behind it (an INT with one takes Broker's value).
	dflt string
	// brokerSynonym is "group."+name where the broker has that config;
	// minName/maxName are the broker configs bounding it ("" none).
	brokerSynonym, minName, maxName string
	// enum is a STRING's allowed values (ConfigDef's ValidString).
	enum []string
	doc  string
}

const noFloor = math.MinInt64

// defs is every group config, in GroupConfig's definition order, which is
// the order ConfigDef parses and so reports a bad value in.
var defs = []def{
	{name: ConsumerSessionTimeout, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.consumer.session.timeout.ms", minName: "group.consumer.min.session.timeout.ms", maxName: "group.consumer.max.session.timeout.ms",
		doc: "How long a consumer-protocol (KIP-848) member of this group may go without a heartbeat before it is removed."},
	{name: ConsumerHeartbeatInterval, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.consumer.heartbeat.interval.ms", minName: "group.consumer.min.heartbeat.interval.ms", maxName: "group.consumer.max.heartbeat.interval.ms",
		doc: "The interval consumer-protocol members of this group are told to heartbeat at."},
	{name: ShareSessionTimeout, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.share.session.timeout.ms", minName: "group.share.min.session.timeout.ms", maxName: "group.share.max.session.timeout.ms",
		doc: "How long a member of this share group may go without a heartbeat before it is removed and its acquired records released."},
	{name: ShareHeartbeatInterval, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.share.heartbeat.interval.ms", minName: "group.share.min.heartbeat.interval.ms", maxName: "group.share.max.heartbeat.interval.ms",
		doc: "The interval members of this share group are told to heartbeat at."},
	{name: ShareRecordLockDuration, typ: kmsg.ConfigTypeInt, floor: 1000, brokerSynonym: "group.share.record.lock.duration.ms", minName: "group.share.min.record.lock.duration.ms", maxName: "group.share.max.record.lock.duration.ms",
		doc: "How long a record acquired by a member of this share group stays locked to it before it becomes available again."},
	{name: ShareDeliveryCountLimit, typ: kmsg.ConfigTypeInt, floor: 2, brokerSynonym: "group.share.delivery.count.limit", minName: "group.share.min.delivery.count.limit", maxName: "group.share.max.delivery.count.limit",
		doc: "How many times a record of this share group may be delivered before it is archived instead of delivered again."},
	{name: SharePartitionMaxRecordLocks, typ: kmsg.ConfigTypeInt, floor: 100, brokerSynonym: "group.share.partition.max.record.locks", minName: "group.share.min.partition.max.record.locks", maxName: "group.share.max.partition.max.record.locks",
		doc: "The most in-flight records one share-partition of this group holds."},
	{name: ShareAutoOffsetReset, typ: kmsg.ConfigTypeString, floor: noFloor, dflt: "latest",
		doc: "Where a share-partition with no state starts: latest, earliest, or by_duration:<ISO-8601 duration> (the first record at or after now minus the duration)."},
	{name: ShareIsolationLevel, typ: kmsg.ConfigTypeString, floor: noFloor, dflt: "read_uncommitted", enum: []string{"read_committed", "read_uncommitted"},
		doc: "read_committed delivers only committed transactional records; read_uncommitted delivers every record."},
	{name: ShareRenewAcknowledgeEnable, typ: kmsg.ConfigTypeBoolean, floor: noFloor, dflt: "true",
		doc: "Whether members of this share group may renew a record's acquisition lock by acknowledging it RENEW."},
	{name: StreamsSessionTimeout, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.streams.session.timeout.ms", minName: "group.streams.min.session.timeout.ms", maxName: "group.streams.max.session.timeout.ms",
		doc: "How long a streams-group member may go without a heartbeat (streams groups are not served by this facade)."},
	{name: StreamsHeartbeatInterval, typ: kmsg.ConfigTypeInt, floor: 1, brokerSynonym: "group.streams.heartbeat.interval.ms", minName: "group.streams.min.heartbeat.interval.ms", maxName: "group.streams.max.heartbeat.interval.ms",
		doc: "The interval streams-group members heartbeat at (streams groups are not served by this facade)."},
	{name: StreamsNumStandbyReplicas, typ: kmsg.ConfigTypeInt, floor: 0, brokerSynonym: "group.streams.num.standby.replicas", maxName: "group.streams.max.standby.replicas",
		doc: "Standby replicas per task of a streams group (streams groups are not served by this facade)."},
	{name: StreamsInitialRebalanceDelay, typ: kmsg.ConfigTypeInt, floor: 0, brokerSynonym: "group.streams.initial.rebalance.delay.ms",
		doc: "How long a new streams group waits before its first assignment (streams groups are not served by this facade)."},
}

func lookup(name string) (def, bool) {
	for _, d := range defs {
		if d.name == name {
			return d, true
		}
	}
	return def{}, false
}

// Names is every group config name, in Kafka's definition order.
func Names() []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.name
	}
	return out
}

// Setting is one broker-level setting behind a group config: its value
// (the default of every group that does not override it) and the bounds a
// group's override must lie within.
type Setting struct {
	Value, Min, Max int64
	// Static: Value is the facade's configuration (reported
	// STATIC_BROKER_CONFIG), not Kafka's default.
	Static bool
}

// Broker is the broker-level settings, keyed by group config name (the INT
// configs with a broker synonym).
type Broker map[string]Setting

// KafkaBroker is Kafka 4.2's broker defaults and bounds.
func KafkaBroker() Broker {
	return Broker{
		ConsumerSessionTimeout:       {Value: 45000, Min: 45000, Max: 60000},
		ConsumerHeartbeatInterval:    {Value: 5000, Min: 5000, Max: 15000},
		ShareSessionTimeout:          {Value: 45000, Min: 45000, Max: 60000},
		ShareHeartbeatInterval:       {Value: 5000, Min: 5000, Max: 15000},
		ShareRecordLockDuration:      {Value: int64(sharepartition.DefaultLockDuration / time.Millisecond), Min: 15000, Max: 60000},
		ShareDeliveryCountLimit:      {Value: sharepartition.DefaultDeliveryLimit, Min: sharepartition.MinDeliveryLimit, Max: sharepartition.MaxDeliveryLimit},
		SharePartitionMaxRecordLocks: {Value: sharepartition.DefaultMaxLocks, Min: sharepartition.MinMaxLocks, Max: sharepartition.MaxMaxLocks},
		StreamsSessionTimeout:        {Value: 45000, Min: 45000, Max: 60000},
		StreamsHeartbeatInterval:     {Value: 5000, Min: 5000, Max: 15000},
		StreamsNumStandbyReplicas:    {Value: 0, Min: 0, Max: 2},
		StreamsInitialRebalanceDelay: {Value: 3000, Min: 0, Max: math.MaxInt32},
	}
}

// WithStatic is b with name's broker-level value set from the facade's
// configuration, its bounds widened to hold it (Kafka refuses to start
// with a default outside its bounds; the facade's variables have their own
// ranges, so the bounds give way instead).
func (b Broker) WithStatic(name string, value int64) Broker {
	out := make(Broker, len(b))
	for k, v := range b {
		out[k] = v
	}
	s := out[name]
	s.Value, s.Static = value, true
	s.Min, s.Max = min(s.Min, value), max(s.Max, value)
	out[name] = s
	return out
}

// kafkaDefault is the value Kafka itself ships for d: the DEFAULT_CONFIG
// synonym behind a static setting.
func kafkaDefault(d def) string {
	if d.brokerSynonym == "" {
		return d.dflt
	}
	return strconv.FormatInt(KafkaBroker()[d.name].Value, 10)
}

// dflt is d's value for a group that does not override it.
func (b Broker) dflt(d def) string {
	if d.brokerSynonym == "" {
		return d.dflt
	}
	return strconv.FormatInt(b[d.name].Value, 10)
}

// configError is a refusal answered INVALID_CONFIG with Kafka's sentence.
type configError struct{ msg string }

func (e *configError) Error() string { return e.msg }

func invalid(format string, args ...any) error {
	return &configError{msg: fmt.Sprintf(format, args...)}
}

// canonical parses raw as d's type, as ConfigDef.parse does (trimmed; a
// boolean case-insensitively), and returns the value's canonical string.
func canonical(d def, raw string) (string, error) {
	v := strings.TrimSpace(raw)
	bad := func(why string) error {
		return invalid("Invalid value %s for configuration %s: %s", raw, d.name, why)
	}
	switch d.typ {
	case kmsg.ConfigTypeInt:
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return "", bad("Not a number of type INT")
		}
		if d.floor != noFloor && n < d.floor {
			return "", invalid("Invalid value %d for configuration %s: Value must be at least %d", n, d.name, d.floor)
		}
		return strconv.FormatInt(n, 10), nil
	case kmsg.ConfigTypeBoolean:
		switch strings.ToLower(v) {
		case "true", "false":
			return strings.ToLower(v), nil
		}
		return "", bad("Expected value to be either true or false")
	}
	if d.enum != nil && !slices.Contains(d.enum, v) {
		return "", invalid("Invalid value %s for configuration %s: String must be one of: %s", v, d.name, strings.Join(d.enum, ", "))
	}
	if d.name == ShareAutoOffsetReset {
		if _, err := parseReset(v); err != nil {
			return "", invalid("Invalid value %s for configuration %s: Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'.", v, d.name, v, d.name)
		}
	}
	return v, nil
}

// parseReset reads share.auto.offset.reset as Kafka's
// ShareGroupAutoOffsetResetStrategy does: the strategy case-insensitively.
func parseReset(v string) (sharepartition.Reset, error) {
	kind, rest, found := strings.Cut(v, ":")
	s := strings.ToLower(kind)
	if found {
		if s != "by_duration" {
			return sharepartition.Reset{}, fmt.Errorf("strategy %q takes no argument", kind)
		}
		s += ":" + rest
	}
	return sharepartition.ParseReset(s)
}

// Validate checks overrides as Kafka's GroupConfig.validate does, merged
// with the broker-level settings b: every name known, every value of its
// type and above its floor, every bounded value within its broker bounds,
// and each session timeout above its heartbeat interval. The error's
// message is Kafka's; the caller answers it INVALID_CONFIG.
func (b Broker) Validate(overrides map[string]string) error {
	names := make([]string, 0, len(overrides))
	for n := range overrides {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if _, ok := lookup(n); !ok {
			return invalid("Unknown group config name: %s", n)
		}
	}
	ints := make(map[string]int64, len(defs))
	for _, d := range defs {
		raw, set := overrides[d.name]
		if !set {
			raw = b.dflt(d)
		}
		v, err := canonical(d, raw)
		if err != nil {
			return err
		}
		if d.typ == kmsg.ConfigTypeInt {
			ints[d.name], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	for _, n := range []string{ConsumerHeartbeatInterval, ConsumerSessionTimeout, ShareHeartbeatInterval, ShareSessionTimeout,
		ShareRecordLockDuration, ShareDeliveryCountLimit, SharePartitionMaxRecordLocks, StreamsHeartbeatInterval, StreamsSessionTimeout, StreamsNumStandbyReplicas} {
		d, _ := lookup(n)
		s, v := b[n], ints[n]
		if d.minName != "" && v < s.Min {
			return invalid("%s must be greater than or equal to %s", n, d.minName)
		}
		if v > s.Max {
			return invalid("%s must be less than or equal to %s", n, d.maxName)
		}
	}
	for _, p := range [][2]string{{ConsumerSessionTimeout, ConsumerHeartbeatInterval}, {ShareSessionTimeout, ShareHeartbeatInterval}, {StreamsSessionTimeout, StreamsHeartbeatInterval}} {
		if ints[p[0]] <= ints[p[1]] {
			return invalid("%s must be greater than %s", p[0], p[1])
		}
	}
	return nil
}

// Values is a group's effective settings: its overrides over the
// broker-level settings, each within its broker bounds (a stored value the
// bounds no longer admit is capped, as Kafka 4.2's GroupConfig.evaluate
// does).
type Values struct {
	ConsumerSessionTimeout       time.Duration
	ConsumerHeartbeatInterval    time.Duration
	ShareSessionTimeout          time.Duration
	ShareHeartbeatInterval       time.Duration
	ShareRecordLockDuration      time.Duration
	ShareDeliveryCountLimit      int
	SharePartitionMaxRecordLocks int
	ShareAutoOffsetReset         sharepartition.Reset
	// ShareReadCommitted is share.isolation.level read_committed.
	ShareReadCommitted           bool
	ShareRenewAcknowledgeEnable  bool
	StreamsSessionTimeout        time.Duration
	StreamsHeartbeatInterval     time.Duration
	StreamsNumStandbyReplicas    int
	StreamsInitialRebalanceDelay time.Duration
}

// Share is the share-partition limits Values sets.
func (v Values) Share() sharepartition.Config {
	return sharepartition.Config{LockDuration: v.ShareRecordLockDuration, DeliveryLimit: v.ShareDeliveryCountLimit, MaxLocks: v.SharePartitionMaxRecordLocks}
}

// Values is the effective settings of a group whose overrides are
// overrides (as stored: a value that no longer parses takes the default).
func (b Broker) Values(overrides map[string]string) Values {
	intOf := func(name string) int64 {
		d, _ := lookup(name)
		s := b[name]
		v := s.Value
		if raw, ok := overrides[name]; ok {
			if c, err := canonical(d, raw); err == nil {
				v, _ = strconv.ParseInt(c, 10, 64)
			}
		}
		if d.minName != "" {
			v = max(v, s.Min)
		}
		if d.maxName != "" {
			v = min(v, s.Max)
		}
		return v
	}
	ms := func(name string) time.Duration { return time.Duration(intOf(name)) * time.Millisecond }
	str := func(name string) string {
		d, _ := lookup(name)
		if raw, ok := overrides[name]; ok {
			if c, err := canonical(d, raw); err == nil {
				return c
			}
		}
		return d.dflt
	}
	reset, err := parseReset(str(ShareAutoOffsetReset))
	if err != nil {
		reset = sharepartition.Reset{Kind: sharepartition.ResetLatest}
	}
	return Values{
		ConsumerSessionTimeout:       ms(ConsumerSessionTimeout),
		ConsumerHeartbeatInterval:    ms(ConsumerHeartbeatInterval),
		ShareSessionTimeout:          ms(ShareSessionTimeout),
		ShareHeartbeatInterval:       ms(ShareHeartbeatInterval),
		ShareRecordLockDuration:      ms(ShareRecordLockDuration),
		ShareDeliveryCountLimit:      int(intOf(ShareDeliveryCountLimit)),
		SharePartitionMaxRecordLocks: int(intOf(SharePartitionMaxRecordLocks)),
		ShareAutoOffsetReset:         reset,
		ShareReadCommitted:           str(ShareIsolationLevel) == "read_committed",
		ShareRenewAcknowledgeEnable:  str(ShareRenewAcknowledgeEnable) == "true",
		StreamsSessionTimeout:        ms(StreamsSessionTimeout),
		StreamsHeartbeatInterval:     ms(StreamsHeartbeatInterval),
		StreamsNumStandbyReplicas:    int(intOf(StreamsNumStandbyReplicas)),
		StreamsInitialRebalanceDelay: ms(StreamsInitialRebalanceDelay),
	}
}
