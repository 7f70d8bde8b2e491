package sharegroup

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/ownership"
)

type env struct {
	t      testing.TB
	clock  *testsupport.TimerClock
	kv     *memkv.KV
	topics *fakeTopics
	m      *Manager
	group  string
	goneMu sync.Mutex
	gone   []string // OnMemberGone's calls, "group/member"
}

func newEnv(t testing.TB) *env {
	e := &env{t: t, clock: testsupport.NewTimerClock(time.Unix(1_787_824_800, 0)), kv: memkv.New(), topics: &fakeTopics{}, group: "g"}
	e.m = e.manager(nil, false, 1)
	return e
}

func (e *env) manager(own *testsupport.Owners, fenced bool, node int32) *Manager {
	var o ownership.Owners
	if own != nil {
		o = own
	}
	return New(Config{Ownership: o, Clock: e.clock, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Fenced: fenced, NodeID: node, Incarnation: "inc",
		OnMemberGone: func(_ context.Context, _ KV, group, member string) {
			e.goneMu.Lock()
			e.gone = append(e.gone, group+"/"+member)
			e.goneMu.Unlock()
		}})
}

func (e *env) goneCalls() []string {
	e.goneMu.Lock()
	defer e.goneMu.Unlock()
	return append([]string(nil), e.gone...)
}

func (e *env) client() Client {
	return Client{ID: "client", Host: "/127.0.0.1", KV: e.kv, Topics: e.topics}
}

func hbReq(group, id string, epoch int32, names ...string) *kmsg.ShareGroupHeartbeatRequest {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = group, id, epoch
	if names != nil {
		req.SubscribedTopicNames = append([]string{}, names...)
	}
	return req
}

func (e *env) join(id string, names ...string) *kmsg.ShareGroupHeartbeatResponse {
	return e.on(e.m, hbReq(e.group, id, 0, names...))
}

func (e *env) hb(id string, epoch int32) *kmsg.ShareGroupHeartbeatResponse {
	return e.on(e.m, hbReq(e.group, id, epoch))
}

func (e *env) on(m *Manager, req *kmsg.ShareGroupHeartbeatRequest) *kmsg.ShareGroupHeartbeatResponse {
	e.t.Helper()
	return m.Heartbeat(context.Background(), e.client(), req)
}

// assigned is what an answer assigns (topic id to partitions), nil when it
// carries no assignment.
func assigned(r *kmsg.ShareGroupHeartbeatResponse) parts {
	if r.Assignment == nil {
		return nil
	}
	out := parts{}
	for _, tp := range r.Assignment.TopicPartitions {
		out[tp.TopicID] = tp.Partitions
	}
	return out
}

// fakeTopics is a catalogue the test edits.
type fakeTopics struct {
	mu     sync.Mutex
	topics []Topic
	err    error
}

func (f *fakeTopics) All(context.Context) ([]Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return append([]Topic(nil), f.topics...), nil
}

func (f *fakeTopics) add(name string, n int32) [16]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, t := range f.topics {
		if t.Name == name {
			f.topics[i].Partitions = n
			return t.ID
		}
	}
	var id [16]byte
	copy(id[:], name)
	id[15] = byte(len(f.topics) + 1)
	f.topics = append(f.topics, Topic{Name: name, ID: id, Partitions: n})
	return id
}

func all(n int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}
