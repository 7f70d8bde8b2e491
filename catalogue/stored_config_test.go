package catalogue

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's ConfigDef messages, value by value (LogConfig's definitions).
func TestStoredConfigValidation(t *testing.T) {
	cases := []struct{ name, raw, want, err string }{
		{"segment.bytes", " 1048576 ", "1048576", ""},
		{"segment.bytes", "1048575", "", "Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576"},
		{"segment.bytes", "2147483648", "", "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"},
		{"segment.ms", "+7", "7", ""},
		{"segment.ms", "0", "", "Invalid value 0 for configuration segment.ms: Value must be at least 1"},
		{"retention.bytes", "-9223372036854775808", "-9223372036854775808", ""},
		{"local.retention.ms", "-3", "", "Invalid value -3 for configuration local.retention.ms: Value must be at least -2"},
		{"compression.lz4.level", "18", "", "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"},
		{"compression.gzip.level", "-1", "-1", ""},
		{"compression.gzip.level", "0", "", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{"compression.zstd.level", "-131072", "-131072", ""},
		{"min.cleanable.dirty.ratio", "1", "1.0", ""},
		{"min.cleanable.dirty.ratio", ".00001", "1.0E-5", ""},
		{"min.cleanable.dirty.ratio", "1.5", "", "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"},
		{"min.cleanable.dirty.ratio", "half", "", "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"},
		{"preallocate", " TRUE", "true", ""},
		{"message.timestamp.type", " CreateTime ", "CreateTime", ""},
		{"follower.replication.throttled.replicas", " 0:1 , 1:2", "0:1,1:2", ""},
		{"follower.replication.throttled.replicas", "*", "*", ""},
		{"follower.replication.throttled.replicas", "", "", ""},
		{"follower.replication.throttled.replicas", "0:1,x", "", "Invalid value [0:1, x] for configuration follower.replication.throttled.replicas: follower.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."},
		{"remote.storage.enable", "false", "false", ""},
		{"remote.storage.enable", "true", "", "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."},
		{"segment.msec", "1", "", "Unknown topic config name: segment.msec"},
	}
	for _, c := range cases {
		k := DefaultTopicConfig()
		err := k.Set(c.name, c.raw)
		switch {
		case c.err != "" && (err == nil || err.Error() != c.err):
			t.Errorf("%s=%q: %v, want %q", c.name, c.raw, err, c.err)
		case c.err == "" && (err != nil || k.Value(c.name) != c.want):
			t.Errorf("%s=%q: %v %q, want %q", c.name, c.raw, err, k.Value(c.name), c.want)
		}
	}
}

// storedRoundTrip is the invariant of a stored key: a value Set accepts is
// kept in its canonical form, which Set accepts again unchanged, survives
// the record's JSON, and is described as the topic's own; a value Set
// refuses leaves the config as it was and says why in Kafka's words.
func storedRoundTrip(t *testing.T, name, raw string) {
	k := DefaultTopicConfig()
	before := k.KafkaMap()
	if err := k.Set(name, raw); err != nil {
		msg := err.Error()
		if !strings.HasPrefix(msg, "Invalid value ") && !strings.HasPrefix(msg, "Tiered Storage") && !strings.HasPrefix(msg, "Unknown topic config name: ") {
			t.Fatalf("%s=%q: message %q is not Kafka's", name, raw, msg)
		}
		if len(k.KafkaMap()) != len(before) || len(k.stored) != 0 {
			t.Fatalf("%s=%q refused but kept: %v", name, raw, k.KafkaMap())
		}
		return
	}
	v := k.Value(name)
	again := DefaultTopicConfig()
	if err := again.Set(name, v); err != nil || again.Value(name) != v {
		t.Fatalf("%s=%q: canonical %q not stable: %v %q", name, raw, v, err, again.Value(name))
	}
	b, err := json.Marshal(Record{Kafka: k.KafkaMap()})
	if err != nil {
		t.Fatal(err)
	}
	back := TopicConfigOf(decodeTopicCfg(b))
	if back.Value(name) != v {
		t.Fatalf("%s=%q: record gave back %q, want %q", name, raw, back.Value(name), v)
	}
	es := DescribeEntries(back, 0, FacadeConfigKeys, []string{name}, true, true)
	if len(es) != 1 || *es[0].Value != v || es[0].Source != kmsg.ConfigSourceDynamicTopicConfig || es[0].ConfigType != storedKeys[name].typ {
		t.Fatalf("%s=%q described %+v", name, raw, es)
	}
	back.Reset(name)
	if _, ok := back.KafkaMap()[name]; ok || len(DescribeEntries(back, 0, FacadeConfigKeys, []string{name}, false, false)) != 0 {
		t.Fatalf("%s: still there after Reset", name)
	}
}

// Values around every key's bounds, and noise.
func TestStoredConfigRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	edges := []string{"", " ", "-1", "0", "1", "-2", "4", "9", "17", "22", "1048576", "2147483647", "2147483648", "9223372036854775807", "-9223372036854775808", "0.5", "1e-9", "true", "False", "*", "0:1,2:3", "CreateTime", "LogAppendTime", "NaN"}
	for _, name := range StoredConfigKeys {
		for _, raw := range edges {
			storedRoundTrip(t, name, raw)
		}
		for range 200 {
			storedRoundTrip(t, name, strconv.FormatInt(r.Int64N(1<<40)-1<<39, 10))
			storedRoundTrip(t, name, strconv.FormatFloat(r.Float64()*2-0.5, 'g', -1, 64))
		}
	}
}

func FuzzStoredConfig(f *testing.F) {
	f.Add(uint8(0), "1048576")
	f.Add(uint8(13), "0.25")
	f.Add(uint8(16), " 1:2 ,*")
	f.Fuzz(func(t *testing.T, i uint8, raw string) {
		storedRoundTrip(t, StoredConfigKeys[int(i)%len(StoredConfigKeys)], raw)
	})
}

// Java's Double.toString, which Kafka's DescribeConfigs prints.
func TestJavaDouble(t *testing.T) {
	for f, want := range map[float64]string{0: "0.0", 0.5: "0.5", 1: "1.0", 1e-3: "0.001", 9.99e-4: "9.99E-4", 1e7: "1.0E7", 1234567.5: "1234567.5", -2.5e-10: "-2.5E-10"} {
		if got := javaDouble(f); got != want {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}
