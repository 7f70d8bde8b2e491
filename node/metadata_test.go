package node

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
	"github.com/queen-mq/queen-kafka/transport"
)

// withClock drives the catalogue's TTL from a fake clock, without sleeping.
func withClock(n *Node) *testsupport.FakeClock {
	clk := testsupport.NewFakeClock(time.Unix(1_800_000_000, 0))
	n.now = clk.Now
	n.cats.SetClock(clk.Now)
	return clk
}

func metadata(t *testing.T, n *Node, c *transport.Conn, version int16, allow bool, topics ...string) *kmsg.MetadataResponse {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = version
	req.AllowAutoTopicCreation = allow
	if topics != nil {
		req.Topics = []kmsg.MetadataRequestTopic{}
	}
	for _, tp := range topics {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(tp)})
	}
	r, err := n.handleMetadata(t.Context(), c, req)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	return r.(*kmsg.MetadataResponse)
}

func topicOf(t *testing.T, resp *kmsg.MetadataResponse, name string) kmsg.MetadataResponseTopic {
	t.Helper()
	for _, tp := range resp.Topics {
		if tp.Topic != nil && *tp.Topic == name {
			return tp
		}
	}
	t.Fatalf("topic %q not in the answer", name)
	return kmsg.MetadataResponseTopic{}
}

func TestMetadataSingleModeBrokerAndPartitions(t *testing.T) {
	n, fq := newTestNode(t, nil) // default partitions 4
	fq.addQueue("narrow", 2)
	fq.addQueue("wide", 10)
	resp := metadata(t, n, testConn(t, n), 9, false, "narrow", "wide")
	if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 0 || resp.Brokers[0].Host != "kafka.test" || resp.Brokers[0].Port != 9092 {
		t.Fatalf("brokers %+v", resp.Brokers)
	}
	if resp.ControllerID != 0 || resp.ClusterID == nil || *resp.ClusterID != "queen" {
		t.Fatalf("controller %d cluster %v", resp.ControllerID, resp.ClusterID)
	}
	for name, width := range map[string]int{"narrow": 4, "wide": 10} {
		tp := topicOf(t, resp, name)
		if tp.ErrorCode != 0 || len(tp.Partitions) != width {
			t.Fatalf("%s: error %d width %d, want %d", name, tp.ErrorCode, len(tp.Partitions), width)
		}
		for i, p := range tp.Partitions {
			if p.Partition != int32(i) || p.Leader != 0 || p.LeaderEpoch != -1 || len(p.Replicas) != 1 || p.Replicas[0] != 0 || len(p.ISR) != 1 || p.ISR[0] != 0 {
				t.Fatalf("%s partition %d: %+v", name, i, p)
			}
		}
	}
}

func TestMetadataWidthFloorNeverNarrowsAndClamps(t *testing.T) {
	n, fq := newTestNode(t, nil)
	clk := withClock(n)
	c := testConn(t, n)
	id := fq.addQueue("declared", 0)
	fq.putRow(queen.TopicCfgKey("declared"), map[string]any{"qid": id, "set": map[string]any{}, "at": 1, "partitions": 8})
	other := fq.addQueue("stale", 0)
	_ = other
	fq.putRow(queen.TopicCfgKey("stale"), map[string]any{"qid": "q-of-a-deleted-queue", "set": map[string]any{}, "at": 1, "partitions": 50})
	hid := fq.addQueue("huge", 0)
	fq.putRow(queen.TopicCfgKey("huge"), map[string]any{"qid": hid, "set": map[string]any{}, "at": 1, "partitions": 150_000})

	resp := metadata(t, n, c, 9, false, "declared", "stale", "huge")
	if got := len(topicOf(t, resp, "declared").Partitions); got != 8 {
		t.Fatalf("declared floor: width %d, want 8", got)
	}
	if got := len(topicOf(t, resp, "stale").Partitions); got != 4 {
		t.Fatalf("record of another queue id must be ignored: width %d, want 4", got)
	}
	if got := len(topicOf(t, resp, "huge").Partitions); got != 100_000 {
		t.Fatalf("clamp: width %d", got)
	}

	// The record disappears: the width stays where it was.
	fq.delRow(queen.TopicCfgKey("declared"))
	clk.Advance(catalogue.TTL + time.Millisecond)
	resp = metadata(t, n, c, 9, false, "declared")
	if got := len(topicOf(t, resp, "declared").Partitions); got != 8 {
		t.Fatalf("width narrowed to %d", got)
	}
}

func TestMetadataCatalogueRefreshesAfterTTL(t *testing.T) {
	n, fq := newTestNode(t, nil)
	clk := withClock(n)
	c := testConn(t, n)
	metadata(t, n, c, 9, false) // loads the (empty) catalogue
	fq.addQueue("native", 1)
	if resp := metadata(t, n, c, 9, false, "native"); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("inside the TTL the cached listing answers, got %d", resp.Topics[0].ErrorCode)
	}
	before := fq.count("GET /api/v1/resources/queues")
	clk.Advance(catalogue.TTL)
	if resp := metadata(t, n, c, 9, false, "native"); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("after the TTL the native queue appears, got %d", resp.Topics[0].ErrorCode)
	}
	if got := fq.count("GET /api/v1/resources/queues"); got != before+1 {
		t.Fatalf("%d listings for one refresh", got-before)
	}
}

func TestMetadataAllTopicsHidesInternalAndInvalid(t *testing.T) {
	n, fq := newTestNode(t, nil)
	for _, q := range []string{"b", "a", "__consumer_offsets", "has space"} {
		fq.addQueue(q, 1)
	}
	for _, v := range []int16{0, 1, 9} {
		var resp *kmsg.MetadataResponse
		if v == 0 {
			resp = metadata(t, n, testConn(t, n), 0, false, []string{}...) // v0: empty list = all
		} else {
			resp = metadata(t, n, testConn(t, n), v, false)
		}
		if len(resp.Topics) != 2 || *resp.Topics[0].Topic != "a" || *resp.Topics[1].Topic != "b" {
			t.Fatalf("v%d listing: %+v", v, resp.Topics)
		}
	}
}

func TestMetadataInternalAndInvalidNames(t *testing.T) {
	n, fq := newTestNode(t, nil)
	fq.addQueue("__consumer_offsets", 1)
	before := fq.count("POST /api/v1/configure")
	resp := metadata(t, n, testConn(t, n), 9, true, "__consumer_offsets", "__new", "bad name", "..", string(make([]byte, 250)))
	want := []int16{kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicOrPartition.Code, kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code, kerr.InvalidTopicException.Code}
	if len(resp.Topics) != len(want) {
		t.Fatalf("%d topics answered for %d asked", len(resp.Topics), len(want))
	}
	for i, tp := range resp.Topics {
		if tp.ErrorCode != want[i] || len(tp.Partitions) != 0 {
			t.Errorf("topic %d: error %d, want %d", i, tp.ErrorCode, want[i])
		}
	}
	if got := fq.count("POST /api/v1/configure") - before; got != 0 {
		t.Fatalf("%d configure calls: nothing may be created", got)
	}
}

func TestMetadataAutoCreate(t *testing.T) {
	n, fq := newTestNode(t, nil)
	c := testConn(t, n)
	// v4+: the flag decides.
	if resp := metadata(t, n, c, 9, false, "nope"); resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || fq.queue("nope") != nil {
		t.Fatalf("created although not allowed: %+v", resp.Topics[0])
	}
	resp := metadata(t, n, c, 9, true, "fresh")
	if tp := topicOf(t, resp, "fresh"); tp.ErrorCode != 0 || len(tp.Partitions) != 4 {
		t.Fatalf("auto-created topic: %+v", tp)
	}
	if body := fq.lastBody("POST /api/v1/configure"); fq.queue("fresh") == nil || len(body) != 2 || body["queue"] != "fresh" || body["dedupWindowSeconds"] != float64(900) {
		t.Fatalf("auto-create must send the queue name and QUEEN_KAFKA_DEDUP_WINDOW_SECONDS only: %v", body)
	}
	// Below v4 there is no flag and creation is always allowed.
	for v := int16(0); v < 4; v++ {
		name := fmt.Sprintf("old-v%d", v)
		if resp := metadata(t, n, c, v, false, name); resp.Topics[0].ErrorCode != 0 || fq.queue(name) == nil {
			t.Fatalf("v%d did not create: %+v", v, resp.Topics[0])
		}
	}
	// A known topic is not configured again.
	before := fq.count("POST /api/v1/configure")
	metadata(t, n, c, 9, true, "fresh")
	if fq.count("POST /api/v1/configure") != before {
		t.Fatalf("an existing topic was configured again")
	}
}

// TestMetadataAutoCreateDisabled: QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE=false
// is Kafka's auto.create.topics.enable=false (KafkaApis.getTopicMetadata
// creates only when allowAutoTopicCreation && autoCreateTopicsEnable): an
// unknown topic is UNKNOWN_TOPIC_OR_PARTITION at every version, the
// request's flag notwithstanding, and nothing is configured in Queen;
// Produce never creates either. Known topics are answered as ever.
func TestMetadataAutoCreateDisabled(t *testing.T) {
	n, fq := newTestNode(t, map[string]string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false"})
	c := testConn(t, n)
	fq.addQueue("known", 2)
	before := fq.count("POST /api/v1/configure")
	for _, v := range []int16{0, 3, 4, 9, 12} {
		name := fmt.Sprintf("absent-v%d", v)
		resp := metadata(t, n, c, v, true, name, "known")
		if tp := topicOf(t, resp, name); tp.ErrorCode != kerr.UnknownTopicOrPartition.Code || len(tp.Partitions) != 0 || tp.TopicID != ([16]byte{}) || fq.queue(name) != nil {
			t.Fatalf("v%d: an unknown topic was not refused: %+v", v, tp)
		}
		if tp := topicOf(t, resp, "known"); tp.ErrorCode != 0 || len(tp.Partitions) != 4 {
			t.Fatalf("v%d: known topic: %+v", v, tp)
		}
	}
	raw := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()}.Encode(t)
	pr, err := n.handleProduce(t.Context(), c, produceReq(9, -1, "absent-produce", 0, raw))
	if p := pr.(*kmsg.ProduceResponse).Topics[0].Partitions[0]; err != nil || p.ErrorCode != kerr.UnknownTopicOrPartition.Code || fq.queue("absent-produce") != nil {
		t.Fatalf("produce to an unknown topic: %v %+v", err, p)
	}
	if got := fq.count("POST /api/v1/configure") - before; got != 0 {
		t.Fatalf("%d configure calls: nothing may be created", got)
	}
}

// TestAutoCreateDedupWindowZero: QUEEN_KAFKA_DEDUP_WINDOW_SECONDS=0 leaves
// every queue as Queen makes it (seed 002): auto-create sends the name only
// and CreateTopics the retention options only.
func TestAutoCreateDedupWindowZero(t *testing.T) {
	n, fq := newTestNode(t, map[string]string{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS": "0"})
	c := testConn(t, n)
	metadata(t, n, c, 9, true, "fresh")
	if body := fq.lastBody("POST /api/v1/configure"); fq.queue("fresh") == nil || len(body) != 1 || body["queue"] != "fresh" {
		t.Fatalf("auto-create with a window of 0 must send the queue name only: %v", body)
	}
	createTopics(t, n, c, 5, false, createSpec{"declared", 3, 1, nil})
	if body := fq.lastBody("POST /api/v1/configure"); fmt.Sprint(body) != "map[queue:declared retentionEnabled:false retentionSeconds:0]" {
		t.Fatalf("CreateTopics with a window of 0: %v", body)
	}
}

func TestMetadataAutoCreateCapPerRequest(t *testing.T) {
	n, fq := newTestNode(t, nil)
	var names []string
	for i := 0; i < 101; i++ {
		names = append(names, fmt.Sprintf("t%03d", i))
	}
	resp := metadata(t, n, testConn(t, n), 9, true, names...)
	if len(resp.Topics) != len(names) {
		t.Fatalf("%d topics answered for %d asked", len(resp.Topics), len(names))
	}
	for i, tp := range resp.Topics {
		want := int16(0)
		if i == 100 {
			want = kerr.LeaderNotAvailable.Code
		}
		if tp.ErrorCode != want {
			t.Fatalf("topic %d: error %d, want %d", i, tp.ErrorCode, want)
		}
	}
	if got := fq.count("POST /api/v1/configure"); got != 100 {
		t.Fatalf("%d creates, want 100", got)
	}
}

func TestMetadataAllTopicsPartitionBudget(t *testing.T) {
	n, fq := newTestNode(t, map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "1"})
	for name, floor := range map[string]int{"a": 100_000, "b": 99_999, "c": 2 /* past the budget */} {
		id := fq.addQueue(name, 0)
		fq.putRow(queen.TopicCfgKey(name), map[string]any{"qid": id, "set": map[string]any{}, "at": 1, "partitions": floor})
	}
	fq.addQueue("d", 1) // still fits
	resp := metadata(t, n, testConn(t, n), 9, false)
	var names []string
	total := 0
	for _, tp := range resp.Topics {
		names = append(names, *tp.Topic)
		total += len(tp.Partitions)
	}
	if fmt.Sprint(names) != "[a b d]" || total != 200_000 {
		t.Fatalf("listing %v with %d partitions", names, total)
	}
}

func TestMetadataQueenFaults(t *testing.T) {
	cases := []struct {
		status   int
		ra       string
		code     int16
		throttle int32
	}{
		{429, "7", kerr.LeaderNotAvailable.Code, 7000},
		{429, "", kerr.LeaderNotAvailable.Code, 1000},
		{401, "", kerr.TopicAuthorizationFailed.Code, 0},
		{403, "", kerr.TopicAuthorizationFailed.Code, 0},
		{503, "1", kerr.LeaderNotAvailable.Code, 0},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprint(tc.status, tc.ra), func(t *testing.T) {
			n, fq := newTestNode(t, nil)
			fq.setFault(func(*http.Request) (int, string, string) { return tc.status, tc.ra, `{"error":"no"}` })
			resp := metadata(t, n, testConn(t, n), 9, true, "orders")
			if resp.ThrottleMillis != tc.throttle || resp.Topics[0].ErrorCode != tc.code {
				t.Fatalf("throttle %d code %d, want %d %d", resp.ThrottleMillis, resp.Topics[0].ErrorCode, tc.throttle, tc.code)
			}
		})
	}
}

// A refresh that fails after a successful one answers from the previous
// listing rather than unknowing every topic.
func TestMetadataServesPreviousListingOnQueenBlip(t *testing.T) {
	n, fq := newTestNode(t, nil)
	clk := withClock(n)
	c := testConn(t, n)
	fq.addQueue("orders", 1)
	metadata(t, n, c, 9, false, "orders")
	fq.setFault(func(*http.Request) (int, string, string) { return 503, "", "" })
	clk.Advance(catalogue.TTL)
	if resp := metadata(t, n, c, 9, false, "orders"); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("got %d", resp.Topics[0].ErrorCode)
	}
	if w, ok, err := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); err != nil || !ok || w != 4 {
		t.Fatalf("topicWidth %d %v %v", w, ok, err)
	}
	fq.setFault(func(*http.Request) (int, string, string) { return 429, "5", "" })
	clk.Advance(catalogue.RefreshBackoffMin) // the failed refresh's backoff runs out
	if resp := metadata(t, n, c, 9, false, "orders"); resp.Topics[0].ErrorCode != 0 || resp.ThrottleMillis != 5000 {
		t.Fatalf("throttled refresh over a previous listing: code %d throttle %d", resp.Topics[0].ErrorCode, resp.ThrottleMillis)
	}
}

func TestTopicWidthIsCached(t *testing.T) {
	n, fq := newTestNode(t, nil)
	withClock(n)
	c := testConn(t, n)
	fq.addQueue("orders", 6)
	before := fq.count("GET /api/v1/resources/queues")
	for i := 0; i < 50; i++ {
		w, ok, err := n.cats.TopicWidth(t.Context(), callerOf(c), "orders")
		if err != nil || !ok || w != 6 {
			t.Fatalf("%d %v %v", w, ok, err)
		}
	}
	if _, ok, _ := n.cats.TopicWidth(t.Context(), callerOf(c), "absent"); ok {
		t.Fatal("absent topic exists")
	}
	if got := fq.count("GET /api/v1/resources/queues") - before; got != 1 {
		t.Fatalf("%d listings for 51 lookups inside one TTL", got)
	}
}

// Many concurrent lookups on a cold catalogue share one refresh.
func TestCatalogueRefreshIsShared(t *testing.T) {
	n, fq := newTestNode(t, nil)
	withClock(n)
	fq.addQueue("orders", 1)
	before := fq.count("GET /api/v1/resources/queues")
	gate := make(chan struct{})
	fq.setFault(func(r *http.Request) (int, string, string) { <-gate; return 0, "", "" })
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, err := n.cats.TopicWidth(t.Context(), catalogue.Caller{}, "orders"); err != nil || !ok {
				t.Errorf("%v %v", ok, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the lookups pile up behind the gate
	close(gate)
	wg.Wait()
	if got := fq.count("GET /api/v1/resources/queues") - before; got != 1 {
		t.Fatalf("%d listings", got)
	}
}

// The same mapping against the dev broker's own fault injection: a 429
// with Retry-After on the queue listing, then a 403.
func TestMetadataDevBrokerFaults(t *testing.T) {
	n, dq := newTestNode(t, nil)
	seven := 7
	dq.injectFault(dev.FaultRule{Route: "queues", Status: 429, RetryAfter: &seven, Count: 1})
	resp := metadata(t, n, testConn(t, n), 9, false, "orders")
	if resp.ThrottleMillis != 7000 || resp.Topics[0].ErrorCode != kerr.LeaderNotAvailable.Code {
		t.Fatalf("429: throttle %d code %d", resp.ThrottleMillis, resp.Topics[0].ErrorCode)
	}
	n2, dq2 := newTestNode(t, nil)
	dq2.injectFault(dev.FaultRule{Route: "queues", Status: 403, Count: 1})
	resp = metadata(t, n2, testConn(t, n2), 9, false, "orders")
	if resp.ThrottleMillis != 0 || resp.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("403: throttle %d code %d", resp.ThrottleMillis, resp.Topics[0].ErrorCode)
	}
}

// promptly runs f and fails the test if f has not returned while the
// fault it runs under still holds: the fault only ends when the test
// releases it, so "answered before the hang ends" is an ordering, and the
// deadline only turns an answer that never comes into a failure.
func promptly(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s waited for the hung KV", what)
	}
}

// TestMetadataAndProducerIDsWhileKVHangs (issue 11, item 7): with every KV
// call hung (a black hole, not an error) and the listing stale, Metadata,
// the data path's topic lookup and InitProducerId answer from what the node
// holds — the stale listing, the producer-id block reserved ahead of need —
// while the refresh and the reservation wait in the background.
func TestMetadataAndProducerIDsWhileKVHangs(t *testing.T) {
	n, fq := newTestNode(t, nil)
	clk := withClock(n)
	c := testConn(t, n)
	fq.addQueue("orders", 2)
	if resp := metadata(t, n, c, 9, false, "orders"); resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("metadata before the hang: code %d", resp.Topics[0].ErrorCode)
	}
	initPID := func() *kmsg.InitProducerIDResponse {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.ProducerID, req.ProducerEpoch = 4, -1, -1
		resp, err := n.handleInitProducerID(t.Context(), c, req)
		if err != nil {
			t.Fatalf("init producer id: %v", err)
		}
		return resp.(*kmsg.InitProducerIDResponse)
	}
	// Half the first block: the next one is reserved ahead of need.
	for range producer.IDBlock/2 + 1 {
		if r := initPID(); r.ErrorCode != 0 {
			t.Fatalf("init producer id before the hang: code %d", r.ErrorCode)
		}
	}
	kvCalls := func() int { return fq.count("POST /api/v1/kv") }
	for i := 0; i < 500 && kvCalls() < 3; i++ { // the listing's read, then two reservations
		time.Sleep(10 * time.Millisecond)
	}

	hung := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(hung) }) }
	t.Cleanup(release)
	fq.setFault(func(r *http.Request) (int, string, string) {
		if r.URL.Path == "/api/v1/kv" {
			select {
			case <-hung:
			case <-r.Context().Done():
			}
		}
		return 0, "", ""
	})
	clk.Advance(catalogue.TTL)
	promptly(t, "Metadata over a stale listing", func() {
		if resp := metadata(t, n, c, 9, false, "orders"); len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 4 {
			t.Errorf("metadata under the hang: %+v", resp.Topics)
		}
	})
	promptly(t, "the data path's topic lookup", func() {
		if w, ok, err := n.cats.TopicWidth(t.Context(), callerOf(c), "orders"); err != nil || !ok || w != 4 {
			t.Errorf("topicWidth under the hang: %d %v %v", w, ok, err)
		}
	})
	promptly(t, "InitProducerId past the first block", func() {
		for range producer.IDBlock {
			if r := initPID(); r.ErrorCode != 0 {
				t.Errorf("init producer id under the hang: code %d", r.ErrorCode)
				return
			}
		}
	})
	release()
}
