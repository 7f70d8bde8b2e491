package node

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

// The tests of the facade's own topic configs: compression.type (the
// codec of Fetch answers) and max.message.bytes (the batch size Produce
// admits).

var readBackPool = recordbatch.NewPool(recordbatch.Limits{Frame: 64 << 20})

// fetchedRecords reads a fetch answer's one batch back through the
// produce side's checks and decoder (CRC, codec, records), as a consumer
// would, and returns its codec and records.
func fetchedRecords(t *testing.T, raw []byte) (int, []envelope.Record) {
	t.Helper()
	var rb kmsg.RecordBatch
	require.Nil(t, recordbatch.ParseProduce(raw, &rb))
	d := readBackPool.Get()
	defer d.Release()
	d.StartRequest()
	buf, ends, f := d.Envelopes(&rb, "t", nil, nil)
	require.Nil(t, f)
	var out []envelope.Record
	at := 0
	for _, end := range ends {
		out = append(out, envelope.DecodePayload(append([]byte(nil), buf[at:end]...), time.Time{}))
		at = end
	}
	return int(rb.Attributes & recordbatch.AttrCodecMask), out
}

// textRecords are n records of compressible 1 KiB values.
func textRecords(n int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{Key: []byte(fmt.Sprint("k", i)), Value: bytes.Repeat([]byte(fmt.Sprintf("record %d of a compressible topic; ", i)), 30)}
	}
	return recs
}

// TestFetchCompressionType: each compression.type answers in its codec,
// the records intact; zstd only from Fetch v10 (uncompressed below);
// uncompressed and producer answer uncompressed. The stored envelopes are
// the same whatever the codec.
func TestFetchCompressionType(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	cases := []struct {
		value    string
		v6, v11  int
		recorded bool
	}{
		{"gzip", recordbatch.CodecGzip, recordbatch.CodecGzip, true},
		{"snappy", recordbatch.CodecSnappy, recordbatch.CodecSnappy, true},
		{"lz4", recordbatch.CodecLz4, recordbatch.CodecLz4, true},
		{"zstd", recordbatch.CodecNone, recordbatch.CodecZstd, true},
		{"uncompressed", recordbatch.CodecNone, recordbatch.CodecNone, true},
		{"producer", recordbatch.CodecNone, recordbatch.CodecNone, true},
		{"", recordbatch.CodecNone, recordbatch.CodecNone, false},
	}
	recs := textRecords(20)
	var plainStored []envelope.Record
	for _, tc := range cases {
		topic := "c-" + tc.value
		cfg := map[string]string{}
		if tc.value != "" {
			cfg["compression.type"] = tc.value
		}
		rt := createTopics(t, e.n, e.c, 5, false, createSpec{topic, 1, 1, cfg}).Topics[0]
		require.Equal(t, int16(0), rt.ErrorCode, tc.value)
		require.Equal(t, int16(0), e.produce(topic, 0, batchtest.Batch{Codec: recordbatch.CodecLz4, FirstTS: 1787824800000, Records: recs}.Encode(t)).ErrorCode)
		for _, v := range []struct {
			version int16
			codec   int
		}{{4, tc.v6}, {6, tc.v6}, {10, tc.v11}, {11, tc.v11}} {
			p := e.fetch(fetchReq(v.version, 0, 1, 1<<20, fetchPart{topic, 0, 0, 1 << 20})).Topics[0].Partitions[0]
			require.Equal(t, int16(0), p.ErrorCode)
			codec, got := fetchedRecords(t, p.RecordBatches)
			require.Equal(t, v.codec, codec, "%s at Fetch v%d", tc.value, v.version)
			require.Len(t, got, len(recs))
			for i := range recs {
				require.Equal(t, recs[i].Key, got[i].Key)
				require.Equal(t, recs[i].Value, got[i].Value)
				require.Equal(t, int64(1787824800000), got[i].Timestamp)
			}
		}
		_, stored := e.stored(topic, 0)
		if plainStored == nil {
			plainStored = stored
		}
		require.Equal(t, plainStored, stored, "what Queen's own clients read does not depend on the codec")
		if tc.recorded {
			require.Equal(t, tc.value, describeValue(t, e.n, e.c, topic, "compression.type"))
		}
	}
}

// describeValue is one config's described value.
func describeValue(t *testing.T, n *Node, c *transport.Conn, topic, name string) string {
	t.Helper()
	rr := describeTopicConfigs(t, n, c, topic, name)
	require.Equal(t, int16(0), rr.ErrorCode)
	require.Len(t, rr.Configs, 1)
	return *rr.Configs[0].Value
}

// TestFetchCompressionDefault: QUEEN_KAFKA_FETCH_COMPRESSION is the codec
// of every topic whose compression.type is unset, reported as the static
// broker config; a topic's own value wins.
func TestFetchCompressionDefault(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "snappy"})
	e.createTopic("native")
	rt := createTopics(t, e.n, e.c, 5, false, createSpec{"plain", 1, 1, map[string]string{"compression.type": "uncompressed"}}).Topics[0]
	require.Equal(t, int16(0), rt.ErrorCode)
	recs := textRecords(10)
	for _, topic := range []string{"native", "plain"} {
		require.Equal(t, int16(0), e.produce(topic, 0, batchtest.Batch{FirstTS: 1, Records: recs}.Encode(t)).ErrorCode)
	}
	p := e.fetch(fetchReq(6, 0, 1, 1<<20, fetchPart{"native", 0, 0, 1 << 20}, fetchPart{"plain", 0, 0, 1 << 20}))
	codec, got := fetchedRecords(t, p.Topics[0].Partitions[0].RecordBatches)
	require.Equal(t, recordbatch.CodecSnappy, codec)
	require.Len(t, got, 10)
	codec, _ = fetchedRecords(t, p.Topics[1].Partitions[0].RecordBatches)
	require.Equal(t, recordbatch.CodecNone, codec)

	rr := describeTopicConfigs(t, e.n, e.c, "native", "compression.type")
	require.Len(t, rr.Configs, 1)
	cfg := rr.Configs[0]
	require.Equal(t, "snappy", *cfg.Value)
	require.Equal(t, kmsg.ConfigSourceStaticBrokerConfig, cfg.Source)
	require.False(t, cfg.IsDefault)
	require.Len(t, cfg.ConfigSynonyms, 2)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, cfg.ConfigSynonyms[1].Source)
	require.Equal(t, "producer", *cfg.ConfigSynonyms[1].Value)
	rr = describeTopicConfigs(t, e.n, e.c, "plain", "compression.type")
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, rr.Configs[0].Source)
	require.Len(t, rr.Configs[0].ConfigSynonyms, 3, "topic, static broker, default")
}

// TestMaxMessageBytes: a batch over the topic's max.message.bytes (as
// sent, log overhead included) is refused MESSAGE_TOO_LARGE naming both
// sizes, and nothing is written; raised, the same batch is stored.
func TestMaxMessageBytes(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	rt := createTopics(t, e.n, e.c, 5, false, createSpec{"big", 1, 1, nil}).Topics[0]
	require.Equal(t, int16(0), rt.ErrorCode)
	raw := batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, 2<<20)}}}.Encode(t)

	p := e.produce("big", 0, raw)
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)
	require.NotNil(t, p.ErrorMessage)
	require.Equal(t, fmt.Sprintf("The record batch size in the append to big-0 is %d bytes which exceeds the maximum configured value of 1048588.", len(raw)), *p.ErrorMessage)
	res, _ := e.stored("big", 0)
	require.Zero(t, res.HighWatermark, "nothing written")

	// Named by id (Produce v13), the same limit and message.
	id, ok := e.n.cats.For(callerOf(e.c)).TopicID("big")
	require.True(t, ok)
	byID := produceReq(13, -1, "", 0, raw)
	byID.Topics[0].TopicID = id
	out, err := e.n.handleProduce(t.Context(), e.c, byID)
	require.NoError(t, err)
	pid := out.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	require.Equal(t, kerr.MessageTooLarge.Code, pid.ErrorCode)
	require.Equal(t, *p.ErrorMessage, *pid.ErrorMessage)

	// A batch of exactly the limit passes; one byte more does not.
	edge := batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, 1000)}}}.Encode(t)
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "big", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp(fmt.Sprint(len(edge)))).ErrorCode)
	require.Equal(t, int16(0), e.produce("big", 0, edge).ErrorCode)
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "big", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp(fmt.Sprint(len(edge)-1))).ErrorCode)
	require.Equal(t, kerr.MessageTooLarge.Code, e.produce("big", 0, edge).ErrorCode)

	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "big", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp("4194304")).ErrorCode)
	p = e.produce("big", 0, raw)
	require.Equal(t, int16(0), p.ErrorCode)
	out, err = e.n.handleProduce(t.Context(), e.c, byID)
	require.NoError(t, err)
	require.Equal(t, int16(0), out.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, "by id too")
	rr := describeTopicConfigs(t, e.n, e.c, "big", "max.message.bytes")
	require.Equal(t, "4194304", *rr.Configs[0].Value)
	require.Equal(t, kmsg.ConfigSourceDynamicTopicConfig, rr.Configs[0].Source)
	require.Equal(t, kmsg.ConfigTypeInt, rr.Configs[0].ConfigType)

	// DELETE returns it to Kafka's default.
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "big", kmsg.IncrementalAlterConfigOpDelete, "max.message.bytes", nil).ErrorCode)
	rr = describeTopicConfigs(t, e.n, e.c, "big", "max.message.bytes")
	require.Equal(t, "1048588", *rr.Configs[0].Value)
	require.Equal(t, kmsg.ConfigSourceDefaultConfig, rr.Configs[0].Source)
	require.Equal(t, kerr.MessageTooLarge.Code, e.produce("big", 0, raw).ErrorCode)
}

// TestTopicLimitsAcrossNodes: a second facade over the same Queen applies
// an alter made through the first once its catalogue is refreshed (the
// record is in Queen KV, so every node agrees), and DescribeConfigs, which
// reads the record afresh, reports it at once.
func TestTopicLimitsAcrossNodes(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	rt := createTopics(t, e.n, e.c, 5, false, createSpec{"shared", 1, 1, nil}).Topics[0]
	require.Equal(t, int16(0), rt.ErrorCode)
	n2 := e.node(nil)
	clk := withClock(n2)
	c2 := e.conn(n2)
	raw := batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{{Value: make([]byte, 2<<20)}}}.Encode(t)
	_, p := e.produceOn(c2, 9, "shared", 0, raw)
	require.Equal(t, kerr.MessageTooLarge.Code, p.ErrorCode)

	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "shared", kmsg.IncrementalAlterConfigOpSet, "max.message.bytes", strp("8388608")).ErrorCode)
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "shared", kmsg.IncrementalAlterConfigOpSet, "compression.type", strp("gzip")).ErrorCode)
	require.Equal(t, "8388608", describeValue(t, n2, c2, "shared", "max.message.bytes"))
	clk.Advance(catalogue.TTL)
	_, p = e.produceOn(c2, 9, "shared", 0, raw)
	require.Equal(t, int16(0), p.ErrorCode, "node 2 applies the alter after its refresh")
	f := e.fetch(fetchReq(6, 0, 1, 8<<20, fetchPart{"shared", 0, 0, 8 << 20}))
	codec, _ := fetchedRecords(t, f.Topics[0].Partitions[0].RecordBatches)
	require.Equal(t, recordbatch.CodecGzip, codec)
}

// TestTopicLimitsValidation: bad values are INVALID_CONFIG with Kafka's
// message, at create and at alter, and change nothing; the facade's own
// keys can be altered on a topic it did not create, retention cannot.
func TestTopicLimitsValidation(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, nil)
	for _, bad := range []map[string]string{
		{"compression.type": "brotli"},
		{"compression.type": "LZ4"},
		{"compression.type": ""},
		{"max.message.bytes": "-1"},
		{"max.message.bytes": "1MB"},
		{"max.message.bytes": "3000000000"},
	} {
		rt := createTopics(t, e.n, e.c, 5, false, createSpec{"bad", 1, 1, bad}).Topics[0]
		require.Equal(t, kerr.InvalidConfig.Code, rt.ErrorCode, "%v", bad)
		require.NotNil(t, rt.ErrorMessage)
	}
	rt := createTopics(t, e.n, e.c, 5, false, createSpec{"bad", 1, 1, map[string]string{"compression.type": "brotli"}}).Topics[0]
	require.Equal(t, "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer", *rt.ErrorMessage)

	e.createTopic("native")
	rr := incrementalAlter(t, e.n, e.c, "native", kmsg.IncrementalAlterConfigOpSet, "compression.type", strp("zstd2"))
	require.Equal(t, kerr.InvalidConfig.Code, rr.ErrorCode)
	require.Equal(t, "producer", describeValue(t, e.n, e.c, "native", "compression.type"))
	require.Equal(t, int16(0), incrementalAlter(t, e.n, e.c, "native", kmsg.IncrementalAlterConfigOpSet, "compression.type", strp("zstd")).ErrorCode)
	require.Equal(t, "zstd", describeValue(t, e.n, e.c, "native", "compression.type"))
	rr = incrementalAlter(t, e.n, e.c, "native", kmsg.IncrementalAlterConfigOpSet, "retention.ms", strp("60000"))
	require.Equal(t, kerr.PolicyViolation.Code, rr.ErrorCode, "retention of a native topic stays Queen's")
	require.Equal(t, "zstd", describeValue(t, e.n, e.c, "native", "compression.type"))

	// AlterConfigs replaces the facade's keys on a native topic without
	// touching its queue.
	req := kmsg.NewPtrAlterConfigsRequest()
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "native"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "max.message.bytes", Value: strp("2000000")}}
	req.Resources = append(req.Resources, r)
	require.Equal(t, int16(0), call[*kmsg.AlterConfigsResponse](t, e.n, e.c, req).Resources[0].ErrorCode)
	require.Equal(t, "producer", describeValue(t, e.n, e.c, "native", "compression.type"), "unnamed: back to its default")
	require.Equal(t, "2000000", describeValue(t, e.n, e.c, "native", "max.message.bytes"))
}

// TestFetchCompressedWithinBudget: whatever the records (incompressible or
// not, small or past the partition budget) and whatever the budgets, a
// compressed answer holds no more than an uncompressed one would: each
// partition within its partition_max_bytes and the whole within max_bytes,
// but for the one first record every answer delivers whole.
func TestFetchCompressedWithinBudget(t *testing.T) {
	e := newDataEnv(t, dev.Options{}, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "4"})
	for _, codec := range []string{"lz4", "gzip", "snappy", "zstd"} {
		rt := createTopics(t, e.n, e.c, 5, false, createSpec{"b-" + codec, 4, 1, map[string]string{"compression.type": codec, "max.message.bytes": "8388608"}}).Topics[0]
		require.Equal(t, int16(0), rt.ErrorCode)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for p := int32(0); p < 4; p++ {
		var recs []kmsg.Record
		for range 30 {
			v := make([]byte, rng.IntN(40_000))
			if rng.IntN(2) == 0 {
				for i := range v {
					v[i] = byte(rng.Uint32())
				}
			} else {
				copy(v, strings.Repeat("compressible ", len(v)/13+1))
			}
			recs = append(recs, kmsg.Record{Value: v})
		}
		for _, codec := range []string{"lz4", "gzip", "snappy", "zstd"} {
			// A batch each: the response's first batch comes whole past
			// the budgets (TestFetchFirstBatchWhole), which this is not about.
			for _, r := range recs {
				require.Equal(t, int16(0), e.produce("b-"+codec, p, batchtest.Batch{FirstTS: 1, Records: []kmsg.Record{r}}.Encode(t)).ErrorCode)
			}
		}
	}
	for round := range 40 {
		codec := []string{"lz4", "gzip", "snappy", "zstd"}[round%4]
		maxBytes := int32(1 + rng.IntN(300_000))
		var parts []fetchPart
		for p := int32(0); p < 4; p++ {
			parts = append(parts, fetchPart{"b-" + codec, p, int64(rng.IntN(30)), int32(1 + rng.IntN(200_000))})
		}
		resp := e.fetch(fetchReq(11, 0, 1, maxBytes, parts...))
		total, first := 0, true
		for i, p := range resp.Topics[0].Partitions {
			require.Equal(t, int16(0), p.ErrorCode)
			n := len(p.RecordBatches)
			if n == 0 {
				continue
			}
			_, got := fetchedRecords(t, p.RecordBatches)
			if !(first && len(got) == 1) {
				require.LessOrEqual(t, n, int(parts[i].max), "round %d partition %d", round, i)
			}
			first = false
			total += n
			if total > int(maxBytes) {
				require.Len(t, got, 1, "round %d: past max_bytes only by a first whole record", round)
				require.Equal(t, n, total, "and only as the first partition answered")
			}
		}
	}
}
