package e2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFencedMemberReleases (issue 22: "a member that leaves or is
// fenced releases what it holds"): member A of a share group acquires every
// record of a partition under a 60 s lock, keeps its connection and share
// session open, and stops heartbeating; once its session times out (2 s
// here) the group fences it, and member B must be handed A's records again
// (delivery count 2) long before the 60 s locks would have run out.
func TestShareFencedMemberReleases(t *testing.T) {
	t.Parallel()
	dev := startQueenDev(t, devOptions{})
	fac := startFacade(t, dev, map[string]string{
		"QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS": "500",
		"QUEEN_KAFKA_SHARE_GROUP_SESSION_TIMEOUT_MS":    "2000",
	})
	seeds := []string{fac.addr}
	topic, group := uniq("share-fenced"), uniq("share-fenced-group")
	const n = 10
	var rs []rec
	for i := 0; i < n; i++ {
		rs = append(rs, rec{partition: 0, offset: int64(i), key: []byte(strconv.Itoa(i)), value: []byte("v")})
	}
	if _, err := newAdmin(t, seeds).CreateTopic(ctxT(t, 10*time.Second), 1, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	produceKgo(t, seeds, topic, kgo.NoCompression(), rs)
	admin := newKgo(t, seeds)
	setGroupConfigs(t, admin, group, "share.auto.offset.reset", "earliest", "share.record.lock.duration.ms", "60000")
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), admin)
	if err != nil {
		t.Fatal(err)
	}
	var topicID [16]byte
	for _, mt := range md.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			topicID = mt.TopicID
		}
	}

	// fetch is one ShareFetch of member on its own connection, answering
	// the acquired offsets and their delivery counts.
	fetch := func(b *kgo.Broker, member string, epoch int32) map[int64]int16 {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.GroupID, req.MemberID, req.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 1<<20, n, n
		rt := kmsg.NewShareFetchRequestTopic()
		rt.TopicID = topicID
		rp := kmsg.NewShareFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), b)
		if err != nil {
			t.Fatalf("ShareFetch of %s: %v", member, err)
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("ShareFetch of %s: %v", member, err)
		}
		got := map[int64]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				for _, ar := range rp.AcquiredRecords {
					for off := ar.FirstOffset; off <= ar.LastOffset; off++ {
						got[off] = ar.DeliveryCount
					}
				}
			}
		}
		return got
	}

	// A joins, is assigned, acquires everything, and goes silent.
	a := shareMemberID()
	join := kmsg.NewPtrShareGroupHeartbeatRequest()
	join.GroupID, join.MemberID, join.SubscribedTopicNames = group, a, []string{topic}
	eventually(t, 10*time.Second, "member A assigned", func() (bool, string) {
		resp, err := join.RequestWith(ctxT(t, 5*time.Second), admin)
		if err != nil || resp.ErrorCode != 0 {
			return false, "heartbeat: " + errString(err, resp.ErrorCode)
		}
		join.MemberEpoch = resp.MemberEpoch
		return resp.Assignment != nil && len(resp.Assignment.TopicPartitions) > 0, "no assignment yet"
	})
	aConn := newKgo(t, seeds).SeedBrokers()[0]
	held := map[int64]int16{}
	for epoch := int32(0); len(held) < n && epoch < 20; epoch++ {
		for off, dc := range fetch(aConn, a, epoch) {
			held[off] = dc
		}
	}
	if len(held) != n {
		t.Fatalf("member A acquired %d of %d records", len(held), n)
	}
	silent := time.Now()

	// B joins and heartbeats on; it must be handed A's records, redelivered.
	b := shareMemberID()
	ctx, cancel := context.WithCancel(context.Background())
	done, joined := make(chan struct{}), make(chan struct{})
	go shareHeartbeats(ctx, t, admin, group, b, topic, done, joined)
	defer func() { close(done); cancel() }()
	select {
	case <-joined:
	case <-time.After(10 * time.Second):
		t.Fatal("member B was not assigned within 10 s")
	}
	bConn := newKgo(t, seeds).SeedBrokers()[0]
	got := map[int64]int16{}
	for epoch := int32(0); len(got) < n; epoch++ {
		if time.Since(silent) > 20*time.Second {
			t.Fatalf("member B got %d of A's %d records within 20 s of A going silent (session timeout 2 s, locks 60 s): a fenced member's records were not released", len(got), n)
		}
		for off, dc := range fetch(bConn, b, epoch) {
			got[off] = dc
		}
	}
	for off, dc := range got {
		if dc != 2 {
			t.Errorf("offset %d redelivered at delivery count %d, want 2", off, dc)
		}
	}
	t.Logf("member B had A's %d records %v after A went silent", len(got), time.Since(silent).Round(100*time.Millisecond))
}

func errString(err error, code int16) string {
	if err != nil {
		return err.Error()
	}
	if e := kerr.ErrorForCode(code); e != nil {
		return e.Error()
	}
	return "ok"
}
