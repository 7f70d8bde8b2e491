package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/memkv"
	"github.com/queen-mq/queen-kafka/queen"
)

// simMember is a client's group loop reduced to the protocol: join (with
// the v4 member-id round trip), sync, then heartbeat until told to rejoin.
func simMember(ctx context.Context, c *Coordinator, group string, stable func(id string, gen int32) bool) {
	cl := Client{ID: "bench", Host: "/127.0.0.1"}
	memberID := ""
	for ctx.Err() == nil {
		jr := kmsg.NewPtrJoinGroupRequest()
		jr.Version, jr.Group, jr.MemberID = 4, group, memberID
		jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = 30000, 60000
		jr.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", consumerMeta("orders")
		jr.Protocols = []kmsg.JoinGroupRequestProtocol{p}
		j := c.JoinGroup(ctx, cl, jr)
		memberID = j.MemberID
		if j.ErrorCode != 0 {
			continue
		}
		sr := kmsg.NewPtrSyncGroupRequest()
		sr.Version, sr.Group, sr.MemberID, sr.Generation = 2, group, memberID, j.Generation
		for _, m := range j.Members {
			a := kmsg.NewSyncGroupRequestGroupAssignment()
			a.MemberID, a.MemberAssignment = m.MemberID, []byte("x")
			sr.GroupAssignment = append(sr.GroupAssignment, a)
		}
		if s := c.SyncGroup(ctx, cl, sr); s.ErrorCode != 0 {
			continue
		}
		for ctx.Err() == nil {
			hr := kmsg.NewPtrHeartbeatRequest()
			hr.Version, hr.Group, hr.MemberID, hr.Generation = 2, group, memberID, j.Generation
			code := c.Heartbeat(ctx, cl, hr).ErrorCode
			if code == kerr.RebalanceInProgress.Code || code == kerr.UnknownMemberID.Code || code == kerr.IllegalGeneration.Code {
				break
			}
			if stable(memberID, j.Generation) {
				<-ctx.Done()
				return
			}
			runtime.Gosched()
		}
	}
}

// BenchmarkTenMembersToStable is the time from ten members starting at
// once to one Stable generation holding all ten (join delay 0).
func BenchmarkTenMembersToStable(b *testing.B) {
	c := New(Config{KV: memkv.New(), MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, Log: slog.New(slog.DiscardHandler)})
	for i := 0; i < b.N; i++ {
		group := fmt.Sprint("g", i)
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		settled := map[string]int32{}
		stable := func(id string, gen int32) bool {
			mu.Lock()
			defer mu.Unlock()
			settled[id] = gen
			g := c.lookup(Client{}, group)
			g.mu.Lock()
			done := g.state == stateStable && len(g.members) == 10
			g.mu.Unlock()
			if !done || len(settled) < 10 {
				return false
			}
			for _, v := range settled {
				if v != gen {
					return false
				}
			}
			cancel()
			return true
		}
		var wg sync.WaitGroup
		for m := 0; m < 10; m++ {
			wg.Add(1)
			go func() { defer wg.Done(); simMember(ctx, c, group, stable) }()
		}
		wg.Wait()
		cancel()
		// The next iteration's group must not meet the group ceiling.
		c.dropGroup(c.lookup(Client{}, group))
	}
}

// BenchmarkOffsetCommit compares one OffsetCommit through the coordinator
// with the same KV write made directly, both on one in-process dev broker
// over HTTP; the ratio of the two is the coordinator's overhead.
func BenchmarkOffsetCommit(b *testing.B) {
	for _, parts := range []int{1, 100} {
		b.Run(fmt.Sprintf("coordinator/partitions=%d", parts), func(b *testing.B) {
			q := devQueen(b)
			c := New(Config{KV: q, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Minute, Log: slog.New(slog.DiscardHandler)})
			offsets := map[int32]int64{}
			for p := 0; p < parts; p++ {
				offsets[int32(p)] = 1
			}
			cl := Client{ID: "bench"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := commitReq("g", "", -1, "orders", offsets)
				for j := range req.Topics[0].Partitions {
					req.Topics[0].Partitions[j].Offset = int64(i)
				}
				resp := c.OffsetCommit(context.Background(), cl, req)
				if resp.Topics[0].Partitions[0].ErrorCode != 0 {
					b.Fatal(resp.Topics[0].Partitions[0].ErrorCode)
				}
			}
		})
		b.Run(fmt.Sprintf("direct/partitions=%d", parts), func(b *testing.B) {
			q := devQueen(b)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ops := make([]queen.KVOp, parts)
				ts := time.Now().UnixMilli()
				for p := 0; p < parts; p++ {
					ops[p] = putOp(queen.GroupOffsetKey("g", "orders", int32(p)), offsetValue{Offset: int64(i), TS: ts})
				}
				if _, err := q.KV(context.Background(), ops); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
