package node

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// TestClusterShareTwoNodesNeverShareALock: two members of one share group,
// one on each of two cluster nodes, read one partition at once (small
// max_records, so that they race for the same records, each node's
// acquisition a fenced write of the same KV row). No record is ever handed
// to a member while the other holds it, every record is accepted exactly
// once, and released records come back counted.
func TestClusterShareTwoNodesNeverShareALock(t *testing.T) {
	fq, url := newDevQueen(t)
	n1, n2 := joinedNode(t, url, 1), joinedNode(t, url, 2)
	addrs := []string{serveTestNode(t, n1), serveTestNode(t, n2)}
	waitView(t, []int32{1, 2}, n1, n2)
	fq.addQueue("sf-two", 1)
	k := dial(t, addrs[0])
	mr := kmsg.NewPtrMetadataRequest()
	mr.Version = 12
	mr.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("sf-two")}}
	id := k.roundTrip(mr).(*kmsg.MetadataResponse).Topics[0].TopicID

	members := []*shareMember{
		{k: dial(t, addrs[0]), group: "sg2", id: "on-node-1", topic: id},
		{k: dial(t, addrs[1]), group: "sg2", id: "on-node-2", topic: id},
	}
	for _, m := range members {
		joinShare(t, m, "sf-two", addrs...)
		m.next(t) // opens the session; the first initializes the state at the log end
	}
	const n = 60
	pr := k.roundTrip(produceReq(9, -1, "sf-two", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.BenchRecords(n, 16)}.Encode(t))).(*kmsg.ProduceResponse)
	require.Zero(t, pr.Topics[0].Partitions[0].ErrorCode)
	base := pr.Topics[0].Partitions[0].BaseOffset

	var (
		mu       sync.Mutex
		holder   = map[int64]string{}
		accepted = map[int64]int{}
		released int
		redeliv  int
	)
	deadline := time.Now().Add(45 * time.Second)
	var wg sync.WaitGroup
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			var acks []ack
			for time.Now().Before(deadline) {
				// Give the claims up before their acknowledgements are
				// sent: the other member may be handed them as soon as
				// those land.
				mu.Lock()
				for _, a := range acks {
					delete(holder, a.first)
				}
				mu.Unlock()
				req := kmsg.NewPtrShareFetchRequest()
				req.Version, req.GroupID, req.MemberID, req.ShareSessionEpoch = 2, kmsg.StringPtr(m.group), kmsg.StringPtr(m.id), m.epoch
				req.MaxWaitMillis, req.MaxRecords, req.BatchSize = 50, 4, 4
				rp := kmsg.NewShareFetchRequestTopicPartition()
				for _, a := range acks {
					rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: a.first, LastOffset: a.last, AcknowledgeTypes: []int8{a.typ}})
				}
				req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{rp}}}
				resp := m.k.roundTrip(req).(*kmsg.ShareFetchResponse)
				if resp.ErrorCode != 0 {
					t.Errorf("%s: ShareFetch %v", m.id, kerr.ErrorForCode(resp.ErrorCode))
					return
				}
				m.epoch++
				var p *kmsg.ShareFetchResponseTopicPartition
				if len(resp.Topics) > 0 {
					p = &resp.Topics[0].Partitions[0]
				}
				mu.Lock()
				if len(acks) > 0 {
					code := int16(-1)
					if p != nil {
						code = p.AcknowledgeErrorCode
					}
					switch code {
					case 0:
						for _, a := range acks {
							if a.typ == ackAccept {
								accepted[a.first]++
							}
						}
						acks = acks[:0]
					case kerr.CoordinatorNotAvailable.Code:
						// Lost the compare-and-set twice to the other
						// node: nothing applied, the records are still
						// this member's; send the acknowledgements again.
						for _, a := range acks {
							holder[a.first] = m.id
						}
					default:
						t.Errorf("%s: acknowledging what it holds: %v", m.id, kerr.ErrorForCode(code))
						acks = acks[:0]
					}
				}
				if p != nil {
					if p.ErrorCode != 0 && p.ErrorCode != kerr.CoordinatorNotAvailable.Code {
						t.Errorf("%s: partition %v", m.id, kerr.ErrorForCode(p.ErrorCode))
					}
					for _, a := range p.AcquiredRecords {
						for o := a.FirstOffset; o <= a.LastOffset; o++ {
							if h, held := holder[o]; held {
								t.Errorf("offset %d handed to %s while %s holds it", o, m.id, h)
							}
							if accepted[o] > 0 {
								t.Errorf("offset %d handed to %s after it was accepted", o, m.id)
							}
							if a.DeliveryCount > 1 {
								redeliv++
							}
							holder[o] = m.id
							typ := int8(ackAccept)
							if r.IntN(4) == 0 && a.DeliveryCount < 3 {
								typ = ackRelease
								released++
							}
							acks = append(acks, ack{o, o, typ})
						}
					}
				}
				done := len(accepted) == n
				mu.Unlock()
				if done && len(acks) == 0 {
					return
				}
			}
		}()
	}
	wg.Wait()
	require.Len(t, accepted, n, "every record accepted")
	for o := base; o < base+n; o++ {
		require.Equal(t, 1, accepted[o], "offset %d accepted once", o)
	}
	require.Positive(t, released)
	require.Positive(t, redeliv, "released records come back with their count")
}

// TestClusterShareFreshNodeKeepsWhatWasAnswered: what a facade answered
// lives in Queen KV, not in its memory. A member acquires ten records at
// one node and has five ACCEPTed (answered success); a node that never
// saw them (as a facade restarted after a SIGKILL, its clock its own)
// serves another member: the five accepted are never handed out again,
// the other five stay locked until their deadline and only then come back,
// counted.
func TestClusterShareFreshNodeKeepsWhatWasAnswered(t *testing.T) {
	fq, url := newDevQueen(t)
	n1 := joinedNode(t, url, 1)
	addr1 := serveTestNode(t, n1)
	waitView(t, []int32{1}, n1)
	fq.addQueue("sf-fresh", 1)
	k := dial(t, addr1)
	mr := kmsg.NewPtrMetadataRequest()
	mr.Version = 12
	mr.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("sf-fresh")}}
	id := k.roundTrip(mr).(*kmsg.MetadataResponse).Topics[0].TopicID

	a := joinShare(t, &shareMember{k: dial(t, addr1), group: "sgf", id: "a", topic: id}, "sf-fresh", addr1)
	a.next(t) // the state starts at the log end
	pr := k.roundTrip(produceReq(9, -1, "sf-fresh", 0, batchtest.Batch{FirstTS: 1, Records: batchtest.BenchRecords(10, 16)}.Encode(t))).(*kmsg.ProduceResponse)
	require.Zero(t, pr.Topics[0].Partitions[0].ErrorCode)
	base := pr.Topics[0].Partitions[0].BaseOffset
	require.Equal(t, []ack{{base, base + 9, 1}}, acquired(a.next(t)))
	p := a.next(t, ack{base, base + 4, ackAccept})
	require.Zero(t, p.AcknowledgeErrorCode, "the five ACCEPTs answered success")

	n2 := joinedNode(t, url, 2)
	clk := testsupport.NewFakeClock(time.Now())
	n2.now = clk.Now
	n2.cats.SetClock(clk.Now)
	addr2 := serveTestNode(t, n2)
	waitView(t, []int32{1, 2}, n1, n2)
	b := joinShare(t, &shareMember{k: dial(t, addr2), group: "sgf", id: "b", topic: id}, "sf-fresh", addr1, addr2)
	require.Empty(t, b.next(t).AcquiredRecords, "0-4 accepted, 5-9 still locked to a")
	clk.Advance(31 * time.Second)
	require.Equal(t, []ack{{base + 5, base + 9, 2}}, acquired(b.next(t)), "only the unacknowledged come back, after their lock")
}
