package e2e

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// Share groups (issue 22): what the share-group tests have in common.

// shareGroupEnv is a facade's environment for the share-group tests: share
// group members told to heartbeat every half second (as consumerGroupEnv
// has for KIP-848), so a member that joins is assigned at its next
// heartbeat, half a second later, rather than five seconds.
var shareGroupEnv = map[string]string{"QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS": "500"}

// shareLock is the share.record.lock.duration.ms the share tests give
// their groups: the floor Kafka's GroupConfig allows (15 s).
const shareLock = 15 * time.Second

// setGroupConfigs sets group configs (name, value pairs) of group with
// IncrementalAlterConfigs on the GROUP resource (type 32).
func setGroupConfigs(t testing.TB, cl *kgo.Client, group string, kvs ...string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeGroupConfig
	res.ResourceName = group
	for i := 0; i+1 < len(kvs); i += 2 {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = kvs[i], kmsg.StringPtr(kvs[i+1])
		res.Configs = append(res.Configs, c)
	}
	req.Resources = append(req.Resources, res)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("IncrementalAlterConfigs of group %s: %v", group, err)
	}
	for _, r := range resp.Resources {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("IncrementalAlterConfigs of group %s %v: %v (%v)", group, kvs, err, r.ErrorMessage)
		}
	}
}

// shareStartOffsets is DescribeShareGroupOffsets' answer for topic's
// partitions in group: each partition's share-partition start offset
// (SPSO; -1 for a partition with no state).
func shareStartOffsets(t testing.TB, cl *kgo.Client, group, topic string) (map[int32]int64, error) {
	t.Helper()
	req := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	g := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	g.GroupID = group
	rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
	rt.Topic = topic
	for p := int32(0); p < 64; p++ {
		rt.Partitions = append(rt.Partitions, p)
	}
	g.Topics = append(g.Topics, rt)
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("DescribeShareGroupOffsets answered %d groups", len(resp.Groups))
	}
	if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("DescribeShareGroupOffsets: %w", err)
	}
	out := map[int32]int64{}
	for _, rt := range resp.Groups[0].Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode == kerr.UnknownTopicOrPartition.Code {
				continue // past the topic's width
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("DescribeShareGroupOffsets %s[%d]: %w", rt.Topic, rp.Partition, err)
			}
			out[rp.Partition] = rp.StartOffset
		}
	}
	return out, nil
}

// ---- the share worker process (e2e/internal/shareworker) ----

var shareWorker struct {
	once sync.Once
	bin  string
	err  error
}

// shareWorkerBinary builds e2e/internal/shareworker once per run.
func shareWorkerBinary(t testing.TB) string {
	t.Helper()
	shareWorker.once.Do(func() {
		shareWorker.bin = filepath.Join(binDir, "shareworker")
		shareWorker.err = testsupport.GoBuild("", shareWorker.bin, "./internal/shareworker")
	})
	if shareWorker.err != nil {
		t.Fatalf("shareworker did not build: %v", shareWorker.err)
	}
	return shareWorker.bin
}

// startShareWorker starts a share worker of group on topic through seeds,
// killed when t ends; hold is how long it keeps each batch before
// acknowledging it.
func startShareWorker(t testing.TB, name string, seeds []string, group, topic string, hold time.Duration) *proc {
	t.Helper()
	p := &proc{&testsupport.Proc{
		Name: name,
		Bin:  shareWorkerBinary(t),
		Args: []string{"-seeds", strings.Join(seeds, ","), "-group", group, "-topic", topic, "-hold", hold.String()},
		Env:  testsupport.BaseEnv(),
		Out:  &testsupport.LogBuffer{},
	}}
	t.Cleanup(p.kill)
	if err := p.start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// shareLine is one line a share worker printed (see
// e2e/internal/shareworker's doc): a delivery (kind 'D', with key and
// delivery count) or an acknowledgement answered success ('C') or an
// error ('F'), ack 'A' (accept), 'L' (release) or 'J' (reject).
type shareLine struct {
	kind      byte
	partition int32
	offset    int64
	key       int
	dc        int32
	ack       byte
}

// parseShareLines reads a worker's protocol lines from its output (its log
// lines and the harness's markers are skipped; so is a last line a SIGKILL
// cut short).
func parseShareLines(out string) []shareLine {
	var lines []shareLine
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || len(f[0]) != 1 {
			continue
		}
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		sl := shareLine{kind: f[0][0], partition: int32(p), offset: off}
		switch {
		case sl.kind == 'D' && len(f) == 5:
			key, err1 := strconv.Atoi(f[3])
			dc, err2 := strconv.ParseInt(f[4], 10, 32)
			if err1 != nil || err2 != nil {
				continue
			}
			sl.key, sl.dc = key, int32(dc)
		case (sl.kind == 'C' || sl.kind == 'F') && len(f) == 4 && len(f[3]) == 1 && strings.Contains("ALJ", f[3]):
			sl.ack = f[3][0]
		default:
			continue
		}
		lines = append(lines, sl)
	}
	return lines
}
