package catalogue

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// storedKey is a Kafka topic config the facade stores and reports but does
// not apply: its name, type and validator are Kafka's (LogConfig's CONFIG
// definitions, storage/.../log/LogConfig.java), so a tool that reconciles
// topic configs (Terraform, Strimzi, Kafka Streams' internal topics) is
// answered as Kafka answers it and reads back what it set, while nothing
// pretends to enforce it. check returns the value as Kafka describes it
// (ConfigDef.convertToString of the parsed value) or Kafka's
// INVALID_CONFIG message.
type storedKey struct {
	typ   kmsg.ConfigType
	check func(name, raw string) (string, error)
	why   string
}

// Why each group is not applied (DescribeConfigs' documentation).
const (
	whySegments    = "Queen stores records in its own tables: there are no segments, indexes or log files to size, roll or flush."
	whyReplicas    = "Replication and durability are Queen's: there are no replicas, ISR or leader elections to bound."
	whyCompaction  = "Queen does not compact (see cleanup.policy)."
	whyRetention   = "Queen's retention is by age only (retention.ms)."
	whyTimestamps  = "Records keep the producer's timestamps unchecked, and ListOffsets answers on Queen's append clock."
	whyTiered      = "There is no tiered storage."
	whyLevels      = "Fetch answers are compressed at the codec's fixed level."
	whyDownconvert = "Answers are encoded afresh for each fetch version; nothing is down-converted (a Kafka 3 config, kept for tools that still set it)."
)

const maxLong = math.MaxInt64

// storedKeys is every topic config name of Kafka's LogConfig besides the four
// the facade applies, plus two Kafka 3 names removed in 4.0 that tools still
// send.
var storedKeys = map[string]storedKey{
	"segment.bytes":                           {kmsg.ConfigTypeInt, integer(32, 1024*1024, maxLong), whySegments},
	"segment.ms":                              {kmsg.ConfigTypeLong, integer(64, 1, maxLong), whySegments},
	"segment.jitter.ms":                       {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whySegments},
	"segment.index.bytes":                     {kmsg.ConfigTypeInt, integer(32, 4, maxLong), whySegments},
	"index.interval.bytes":                    {kmsg.ConfigTypeInt, integer(32, 0, maxLong), whySegments},
	"flush.messages":                          {kmsg.ConfigTypeLong, integer(64, 1, maxLong), whySegments},
	"flush.ms":                                {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whySegments},
	"file.delete.delay.ms":                    {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whySegments},
	"preallocate":                             {kmsg.ConfigTypeBoolean, boolean, whySegments},
	"retention.bytes":                         {kmsg.ConfigTypeLong, integer(64, math.MinInt64, maxLong), whyRetention},
	"delete.retention.ms":                     {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whyCompaction},
	"min.compaction.lag.ms":                   {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whyCompaction},
	"max.compaction.lag.ms":                   {kmsg.ConfigTypeLong, integer(64, 1, maxLong), whyCompaction},
	"min.cleanable.dirty.ratio":               {kmsg.ConfigTypeDouble, ratio, whyCompaction},
	"min.insync.replicas":                     {kmsg.ConfigTypeInt, integer(32, 1, maxLong), whyReplicas},
	"unclean.leader.election.enable":          {kmsg.ConfigTypeBoolean, boolean, whyReplicas},
	"leader.replication.throttled.replicas":   {kmsg.ConfigTypeList, throttledReplicas, whyReplicas},
	"follower.replication.throttled.replicas": {kmsg.ConfigTypeList, throttledReplicas, whyReplicas},
	"compression.gzip.level":                  {kmsg.ConfigTypeInt, gzipLevel, whyLevels},
	"compression.lz4.level":                   {kmsg.ConfigTypeInt, integer(32, 1, 17), whyLevels},
	"compression.zstd.level":                  {kmsg.ConfigTypeInt, integer(32, -131072, 22), whyLevels},
	"message.timestamp.type":                  {kmsg.ConfigTypeString, oneOf("CreateTime", "LogAppendTime"), whyTimestamps},
	"message.timestamp.before.max.ms":         {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whyTimestamps},
	"message.timestamp.after.max.ms":          {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whyTimestamps},
	"message.timestamp.difference.max.ms":     {kmsg.ConfigTypeLong, integer(64, 0, maxLong), whyTimestamps},
	"message.downconversion.enable":           {kmsg.ConfigTypeBoolean, boolean, whyDownconvert},
	"remote.storage.enable":                   {kmsg.ConfigTypeBoolean, remoteStorage, whyTiered},
	"remote.log.copy.disable":                 {kmsg.ConfigTypeBoolean, boolean, whyTiered},
	"remote.log.delete.on.disable":            {kmsg.ConfigTypeBoolean, boolean, whyTiered},
	"local.retention.ms":                      {kmsg.ConfigTypeLong, integer(64, -2, maxLong), whyTiered},
	"local.retention.bytes":                   {kmsg.ConfigTypeLong, integer(64, -2, maxLong), whyTiered},
	"remote.copy.lag.ms":                      {kmsg.ConfigTypeLong, integer(64, -1, maxLong), whyTiered},
	"remote.copy.lag.bytes":                   {kmsg.ConfigTypeLong, integer(64, -1, maxLong), whyTiered},
}

// StoredConfigKeys is storedKeys' names, sorted.
var StoredConfigKeys = func() []string {
	names := make([]string, 0, len(storedKeys))
	for n := range storedKeys {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}()

// KnownTopicConfig reports whether Kafka knows name as a topic config: the
// four the facade applies and the ones it stores.
func KnownTopicConfig(name string) bool {
	_, stored := storedKeys[name]
	return stored || SupportedTopicConfig(name)
}

// invalid is Kafka's ConfigException(name, value, message) text.
func invalid(name string, value any, msg string) error {
	return fmt.Errorf("Invalid value %v for configuration %s: %s", value, name, msg)
}

// integer is ConfigDef's INT (bits 32) or LONG parse, then Range.between(lo,
// hi) (atLeast when hi is maxLong): the parse trims, the range reports the
// parsed number.
func integer(bits int, lo, hi int64) func(name, raw string) (string, error) {
	typ := "LONG"
	if bits == 32 {
		typ = "INT"
	}
	return func(name, raw string) (string, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, bits)
		switch {
		case err != nil:
			return "", invalid(name, raw, "Not a number of type "+typ)
		case n < lo:
			return "", invalid(name, n, fmt.Sprintf("Value must be at least %d", lo))
		case n > hi:
			return "", invalid(name, n, fmt.Sprintf("Value must be no more than %d", hi))
		}
		return strconv.FormatInt(n, 10), nil
	}
}

// gzipLevel is CompressionType.GZIP's level validator: 1 to 9, or -1
// (Deflater.DEFAULT_COMPRESSION).
func gzipLevel(name, raw string) (string, error) {
	v, err := integer(32, math.MinInt32, maxLong)(name, raw)
	if err != nil {
		return "", err
	}
	if n, _ := strconv.Atoi(v); n > 9 || (n < 1 && n != -1) {
		return "", invalid(name, n, "Value must be between 1 and 9 or equal to -1")
	}
	return v, nil
}

// boolean is ConfigDef's BOOLEAN: true or false, any case, trimmed.
func boolean(name, raw string) (string, error) {
	switch v := strings.ToLower(strings.TrimSpace(raw)); v {
	case "true", "false":
		return v, nil
	}
	return "", invalid(name, raw, "Expected value to be either true or false")
}

// remoteStorage is remote.storage.enable on a broker without tiered storage:
// LogConfig.validateRemoteStorageOnlyIfSystemEnabled refuses true.
func remoteStorage(name, raw string) (string, error) {
	v, err := boolean(name, raw)
	if err == nil && v == "true" {
		return "", fmt.Errorf("Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage.")
	}
	return v, err
}

// oneOf is ConfigDef.ValidString.in: case-sensitive, on the trimmed value.
func oneOf(valid ...string) func(name, raw string) (string, error) {
	return func(name, raw string) (string, error) {
		v := strings.TrimSpace(raw)
		if !slices.Contains(valid, v) {
			return "", invalid(name, v, "String must be one of: "+strings.Join(valid, ", "))
		}
		return v, nil
	}
}

// ratio is min.cleanable.dirty.ratio: a DOUBLE, Range.between(0, 1).
func ratio(name, raw string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
	switch {
	case err != nil:
		return "", invalid(name, raw, "Not a number of type DOUBLE")
	case f < 0:
		return "", invalid(name, javaDouble(f), "Value must be at least 0")
	case f > 1:
		return "", invalid(name, javaDouble(f), "Value must be no more than 1")
	}
	return javaDouble(f), nil
}

// javaDouble is Java's Double.toString: plain between 10^-3 and 10^7 with at
// least one decimal, computerized scientific notation outside.
func javaDouble(f float64) string {
	a := math.Abs(f)
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 0):
		if f > 0 {
			return "Infinity"
		}
		return "-Infinity"
	case a == 0 || (a >= 1e-3 && a < 1e7):
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	mant, exp, _ := strings.Cut(strconv.FormatFloat(f, 'E', -1, 64), "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

var replicaEntry = regexp.MustCompile(`^([0-9]+:[0-9]+)?$`)

// throttledReplicas is ConfigDef's LIST parse (trimmed, split on commas with
// the spaces around them) and ThrottledReplicaListValidator: "*" or
// partitionId:brokerId entries.
func throttledReplicas(name, raw string) (string, error) {
	items := listItems(raw)
	ok := strings.Join(items, "") == "*"
	if !ok {
		ok = true
		for _, it := range items {
			ok = ok && replicaEntry.MatchString(it)
		}
	}
	if !ok {
		return "", invalid(name, "["+strings.Join(items, ", ")+"]", name+" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
	}
	return strings.Join(items, ","), nil
}

// listItems is ConfigDef's LIST parse of a string: none when blank.
func listItems(raw string) []string {
	v := strings.TrimSpace(raw)
	if v == "" {
		return nil
	}
	items := strings.Split(v, ",")
	for i := range items {
		items[i] = strings.TrimSpace(items[i])
	}
	return items
}

// checkCompactionLags is LogConfig.validateValues, the one check across
// keys Kafka makes on a topic's whole config.
func (k TopicConfig) checkCompactionLags() error {
	lag := func(name string, def int64) int64 {
		if v, ok := k.stored[name]; ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
		return def
	}
	lo, hi := lag("min.compaction.lag.ms", 0), lag("max.compaction.lag.ms", maxLong)
	if lo > hi {
		return fmt.Errorf("conflict topic config setting min.compaction.lag.ms (%d) > max.compaction.lag.ms (%d)", lo, hi)
	}
	return nil
}
