package e2e

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareAcquisition is one acquisition of an offset a ShareFetch answered:
// by which member, at which delivery count, when the request was sent and
// its answer read, and what became of it (the time the release or accept
// that ended it was sent; zero while held).
type shareAcquisition struct {
	member     int
	dc         int16
	sent, read time.Time
	released   time.Time // the request carrying its RELEASE was sent
	accepted   bool      // its ACCEPT was answered success
}

// TestShareTwoNodesOnePartition (issue 22, cluster mode): two members of one
// share group read one partition, each through another facade node (its
// ShareFetches pinned to that node, whoever leads the partition), speaking
// ShareFetch directly so that each acquisition's lock is known. Each member
// ACCEPTs a third of what it acquires at once, RELEASEs a third and holds a
// third until its lock expires, and ACCEPTs every redelivery. Checked: both
// members acquired records; no offset was acquired twice at one delivery
// count; an offset acquired again was acquired after its previous holder's
// RELEASE was sent or after that holder's lock ran out (measured from
// before the acquiring request was sent, so a pass is never a timing
// accident in the test's favour); nothing is acquired after an answered
// ACCEPT; every offset ends ACCEPTed.
func TestShareTwoNodesOnePartition(t *testing.T) {
	t.Parallel()
	c := newTestCluster(t, clusterOpts{nodes: 3, env: shareGroupEnv})
	topic, group := uniq("share-two"), uniq("share-two-group")
	c.createTopic(t, topic, 1)
	admin := newKgo(t, c.addrs())
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest",
		"share.record.lock.duration.ms", strconv.Itoa(int(shareLock.Milliseconds())))
	const n = 60
	var rs []rec
	for i := 0; i < n; i++ {
		rs = append(rs, rec{partition: 0, offset: int64(i), key: []byte(strconv.Itoa(i)), value: []byte("v")})
	}
	produceKgo(t, c.addrs(), topic, kgo.NoCompression(), rs)
	md, err := c.metadata(t, 1, topic)
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	topicID := md.Topics[0].TopicID

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var (
		mu   sync.Mutex
		acq  = map[int64][]*shareAcquisition{}
		lock time.Duration // the shortest lock a ShareFetch answered
		// retried counts answers refused with a retriable error.
		retried int
		done    = make(chan struct{})
		closed  sync.Once
	)
	allAccepted := func() bool {
		for off := int64(0); off < n; off++ {
			if !slices.ContainsFunc(acq[off], func(a *shareAcquisition) bool { return a.accepted }) {
				return false
			}
		}
		return true
	}

	var wg sync.WaitGroup
	for m, node := range []int{1, 2} {
		memberID := shareMemberID()
		joined := make(chan struct{})
		wg.Add(2)
		go func() { // heartbeats, through the coordinator
			defer wg.Done()
			shareHeartbeats(ctx, t, admin, group, memberID, topic, done, joined)
		}()
		go func() { // ShareFetches, pinned to node
			defer wg.Done()
			select {
			case <-joined:
			case <-ctx.Done():
				return
			}
			b := newKgo(t, []string{c.node(node).addr}).SeedBrokers()[0]
			var epoch int32
			var acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
			var ackedAccept, ackedRelease []*shareAcquisition
			for ctx.Err() == nil {
				select {
				case <-done:
					return
				default:
				}
				req := kmsg.NewPtrShareFetchRequest()
				req.GroupID, req.MemberID = kmsg.StringPtr(group), kmsg.StringPtr(memberID)
				req.ShareSessionEpoch = epoch
				req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 500, 1, 1<<20
				req.MaxRecords, req.BatchSize = 5, 5
				rt := kmsg.NewShareFetchRequestTopic()
				rt.TopicID = topicID
				rp := kmsg.NewShareFetchRequestTopicPartition()
				rp.Partition, rp.PartitionMaxBytes = 0, 1<<20
				rp.AcknowledgementBatches = acks
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				sent := time.Now()
				mu.Lock()
				for _, a := range ackedRelease {
					a.released = sent
				}
				mu.Unlock()
				resp, err := req.RequestWith(ctx, b)
				read := time.Now()
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("member %d: ShareFetch at node %d: %v", m, node, err)
					}
					return
				}
				if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
					t.Errorf("member %d: ShareFetch at node %d: %v", m, node, err)
					return
				}
				epoch++
				acks = nil
				mu.Lock()
				if l := time.Duration(resp.AcquisitionLockTimeoutMillis) * time.Millisecond; l > 0 && (lock == 0 || l < lock) {
					lock = l
				}
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						// A retriable error (the share-partition's write lost
						// its compare-and-set to the other node twice:
						// COORDINATOR_NOT_AVAILABLE) is retried, as a client
						// does; anything else fails.
						if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
							if !kerr.IsRetriable(err) {
								t.Errorf("member %d: ShareFetch at node %d, partition %d: %v", m, node, rp.Partition, err)
							}
							retried++
						}
						if len(ackedAccept)+len(ackedRelease) > 0 {
							if err := kerr.ErrorForCode(rp.AcknowledgeErrorCode); err != nil {
								if !kerr.IsRetriable(err) {
									t.Errorf("member %d: acknowledgements at node %d answered %v", m, node, err)
								}
								// Not applied: the records stay locked to this
								// member until their locks run out.
								retried++
								for _, a := range ackedRelease {
									a.released = time.Time{}
								}
							} else {
								for _, a := range ackedAccept {
									a.accepted = true
								}
							}
						}
						for _, ar := range rp.AcquiredRecords {
							for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
								a := &shareAcquisition{member: m, dc: ar.DeliveryCount, sent: sent, read: read}
								acq[off] = append(acq[off], a)
								var typ int8
								switch {
								case a.dc > 1 || off%3 == 0:
									typ = 1 // ACCEPT
								case off%3 == 1:
									typ = 2 // RELEASE
								default:
									continue // held until its lock expires
								}
								acks = append(acks, kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: off, LastOffset: off, AcknowledgeTypes: []int8{typ}})
							}
						}
					}
				}
				ackedAccept, ackedRelease = ackedAccept[:0], ackedRelease[:0]
				for _, ab := range acks {
					as := acq[ab.FirstOffset]
					if ab.AcknowledgeTypes[0] == 1 {
						ackedAccept = append(ackedAccept, as[len(as)-1])
					} else {
						ackedRelease = append(ackedRelease, as[len(as)-1])
					}
				}
				if allAccepted() {
					closed.Do(func() { close(done) })
				}
				mu.Unlock()
			}
		}()
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
	cancel()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if !allAccepted() {
		var missing []int64
		for off := int64(0); off < n; off++ {
			if !slices.ContainsFunc(acq[off], func(a *shareAcquisition) bool { return a.accepted }) {
				missing = append(missing, off)
			}
		}
		t.Errorf("offsets never ACCEPTed within 2 minutes: %v", missing)
	}
	if lock == 0 {
		t.Fatalf("no ShareFetch answered an acquisition lock timeout")
	}
	per := [2]int{}
	for off := int64(0); off < n; off++ {
		as := slices.Clone(acq[off])
		slices.SortFunc(as, func(a, b *shareAcquisition) int { return int(a.dc) - int(b.dc) })
		for i, a := range as {
			per[a.member]++
			if i == 0 {
				continue
			}
			prev := as[i-1]
			switch {
			case a.dc == prev.dc:
				t.Errorf("offset %d acquired twice at delivery count %d (members %d and %d)", off, a.dc, prev.member, a.member)
			case prev.accepted:
				t.Errorf("offset %d acquired (count %d, member %d) after member %d's ACCEPT was answered", off, a.dc, a.member, prev.member)
			case !prev.released.IsZero() && a.read.Before(prev.released):
				t.Errorf("offset %d acquired by member %d (count %d) before member %d sent its RELEASE", off, a.member, a.dc, prev.member)
			case prev.released.IsZero() && a.read.Before(prev.sent.Add(lock)):
				t.Errorf("offset %d acquired by member %d (count %d, answered %v after) inside member %d's lock of %v", off, a.member, a.dc, a.read.Sub(prev.sent), prev.member, lock)
			}
		}
	}
	t.Logf("acquisitions by member (node 1, node 2): %v; lock %v; %d fetches or acknowledgements answered a retriable error", per, lock, retried)
	if per[0] == 0 || per[1] == 0 {
		t.Errorf("one member acquired nothing (%v): the partition was not shared", per)
	}
}

// shareMemberID is a client-chosen member id (KIP-1082), as kgo makes one.
func shareMemberID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// shareHeartbeats keeps memberID in group, subscribed to topic, until done
// or ctx ends, then leaves; joined is closed once the member is assigned a
// partition.
func shareHeartbeats(ctx context.Context, t *testing.T, cl *kgo.Client, group, memberID, topic string, done <-chan struct{}, joined chan struct{}) {
	var epoch int32
	interval := 200 * time.Millisecond
	var once sync.Once
	for {
		req := kmsg.NewPtrShareGroupHeartbeatRequest()
		req.GroupID, req.MemberID, req.MemberEpoch = group, memberID, epoch
		req.SubscribedTopicNames = []string{topic}
		resp, err := req.RequestWith(ctx, cl)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				t.Errorf("ShareGroupHeartbeat of %s: %v", memberID, err)
			}
			return
		case resp.ErrorCode != 0:
			t.Errorf("ShareGroupHeartbeat of %s: %v", memberID, kerr.ErrorForCode(resp.ErrorCode))
			return
		}
		epoch = resp.MemberEpoch
		if resp.HeartbeatIntervalMillis > 0 {
			interval = time.Duration(resp.HeartbeatIntervalMillis) * time.Millisecond
		}
		if a := resp.Assignment; a != nil {
			for _, tp := range a.TopicPartitions {
				if len(tp.Partitions) > 0 {
					once.Do(func() { close(joined) })
				}
			}
		}
		select {
		case <-time.After(interval):
			continue
		case <-done:
		case <-ctx.Done():
		}
		leave := kmsg.NewPtrShareGroupHeartbeatRequest()
		leave.GroupID, leave.MemberID, leave.MemberEpoch = group, memberID, -1
		lctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if resp, err := leave.RequestWith(lctx, cl); err != nil || resp.ErrorCode != 0 {
			t.Logf("leaving share group %s: %v %v", group, err, resp)
		}
		cancel()
		return
	}
}
