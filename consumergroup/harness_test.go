package consumergroup

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
)

type env struct {
	t      testing.TB
	clock  *testsupport.TimerClock
	kv     *memkv.KV
	topics *fakeTopics
	m      *Manager
	group  string
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, clock: testsupport.NewTimerClock(time.Unix(1_787_824_800, 0)), kv: memkv.New(), topics: &fakeTopics{}, group: "g"}
	e.m = e.manager(nil, false, 1)
	return e
}

func (e *env) manager(own *testsupport.Owners, fenced bool, node int32) *Manager {
	cfg := Config{KV: e.kv, Clock: e.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Fenced: fenced, NodeID: node, Incarnation: "inc"}
	if own != nil {
		cfg.Ownership = own
	}
	return New(cfg)
}

func (e *env) client() Client { return Client{ID: "client", Host: "/127.0.0.1", Topics: e.topics} }

// join is a member's first heartbeat (v1, epoch 0) subscribed to names.
func (e *env) join(id string, names ...string) *kmsg.ConsumerGroupHeartbeatResponse {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = e.group, id, 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = append([]string{}, names...)
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return e.send(e.m, req)
}

// hb is a partial heartbeat: owned nil says nothing of what it owns.
func (e *env) hb(id string, epoch int32, owned parts) *kmsg.ConsumerGroupHeartbeatResponse {
	return e.send(e.m, hbReq(e.group, id, epoch, owned))
}

func hbReq(group, id string, epoch int32, owned parts) *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, id, epoch
	req.RebalanceTimeoutMillis = -1
	if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		for _, t := range owned.topics() {
			rt := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			rt.TopicID, rt.Partitions = t, slices.Clone(owned[t])
			req.Topics = append(req.Topics, rt)
		}
	}
	return req
}

func (e *env) send(m *Manager, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	e.t.Helper()
	return m.Heartbeat(context.Background(), e.client(), req)
}

// assigned is the partitions an answer assigns, nil when it carries none.
func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) parts {
	if r.Assignment == nil {
		return nil
	}
	raw := map[topicID][]int32{}
	for _, t := range r.Assignment.Topics {
		raw[t.TopicID] = append(raw[t.TopicID], t.Partitions...)
	}
	return partsOf(raw)
}

func (e *env) ok(r *kmsg.ConsumerGroupHeartbeatResponse) *kmsg.ConsumerGroupHeartbeatResponse {
	e.t.Helper()
	if r.ErrorCode != 0 {
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		e.t.Fatalf("heartbeat refused: code %d %s", r.ErrorCode, msg)
	}
	return r
}

func (e *env) refused(r *kmsg.ConsumerGroupHeartbeatResponse, code int16, msg string) {
	e.t.Helper()
	got := ""
	if r.ErrorMessage != nil {
		got = *r.ErrorMessage
	}
	if r.ErrorCode != code || (msg != "" && got != msg) {
		e.t.Fatalf("answer: code %d %q, want %d %q", r.ErrorCode, got, code, msg)
	}
}

// g is the group held in memory.
func (e *env) g() *group {
	g, _ := e.m.reg.Held(groupKey{ID: e.group})
	return g
}

func (e *env) epochs() (group, assignment int32) {
	g := e.g()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.epoch, g.assignmentEpoch
}

// twoSettled joins m1 and m2 to topic and has each heartbeat its
// assignment back (m1 at epoch 1, then m2 at 2), so that both own what
// they were given.
func (e *env) twoSettled(topic string) {
	e.ok(e.join("m1", topic))
	e.ok(e.join("m2", topic))
	r1 := e.ok(e.hb("m1", 1, nil))
	e.ok(e.hb("m1", 1, assigned(r1)))
	r2 := e.ok(e.hb("m2", 2, parts{}))
	e.ok(e.hb("m2", 2, assigned(r2)))
}

// commitCheckAnswers fails the test unless m1's commit check answers 0
// within 5 s while another request of the group is parked on what.
func (e *env) commitCheckAnswers(what string) {
	e.t.Helper()
	checked := make(chan int16, 1)
	go func() {
		_, code := e.m.ValidateCommit(context.Background(), "", nil, "g", "m1", 1, false, 9)
		checked <- code
	}()
	select {
	case code := <-checked:
		if code != 0 {
			e.t.Fatalf("commit check: %d", code)
		}
	case <-time.After(5 * time.Second):
		e.t.Fatal("a commit's member check waited for " + what)
	}
}

func (e *env) advance(d time.Duration) { e.clock.Advance(d) }

func allOf(id topicID, n int32) parts {
	p := parts{}
	for i := int32(0); i < n; i++ {
		p.add(id, i)
	}
	return p
}
