package node

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/queen"
)

// OffsetFetch with require_stable (v7+, KIP-447) answers a partition with
// an offset staged by a transaction that has not ended
// UNSTABLE_OFFSET_COMMIT, offset -1, as Kafka's group coordinator does; a
// partition without one, or a fetch without require_stable, is answered
// the committed offset. After EndTxn(commit) the staged offset is the
// answer, after EndTxn(abort) the one before it. In v8+ the code is per
// partition, the group's 0.

// stableFetch is one OffsetFetch of group's topic[parts] (every partition
// when parts is nil) at version, the partitions' offsets and codes.
func stableFetch(t *testing.T, k *kclient, version int16, stable bool, group, topic string, parts []int32) (map[int32]int64, map[int32]int16) {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = version, stable
	offsets, codes := map[int32]int64{}, map[int32]int16{}
	if version >= 8 {
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = group
		if parts != nil {
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = topic, parts
			g.Topics = append(g.Topics, gt)
		}
		req.Groups = append(req.Groups, g)
		resp := k.roundTrip(req).(*kmsg.OffsetFetchResponse)
		require.Len(t, resp.Groups, 1)
		require.Equal(t, int16(0), resp.Groups[0].ErrorCode, "the group's code: unstable is per partition")
		for _, rt := range resp.Groups[0].Topics {
			require.Equal(t, topic, rt.Topic)
			for _, p := range rt.Partitions {
				offsets[p.Partition], codes[p.Partition] = p.Offset, p.ErrorCode
			}
		}
		return offsets, codes
	}
	req.Group = group
	if parts != nil {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = topic, parts
		req.Topics = append(req.Topics, rt)
	}
	resp := k.roundTrip(req).(*kmsg.OffsetFetchResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	for _, rt := range resp.Topics {
		require.Equal(t, topic, rt.Topic)
		for _, p := range rt.Partitions {
			offsets[p.Partition], codes[p.Partition] = p.Offset, p.ErrorCode
		}
	}
	return offsets, codes
}

// checkRequireStable drives one transactional id through owner (its
// coordinator) with its offsets committed at groupNode (the group's), and
// checks what every fetcher answers.
func checkRequireStable(t *testing.T, owner, groupNode *kclient, fetchers []*kclient, x *rawTxn, group string) {
	t.Helper()
	const topic = "in"
	both := []int32{0, 1}
	expect := func(what string, offsets map[int32]int64, codes map[int32]int16) {
		t.Helper()
		for i, k := range fetchers {
			for _, v := range []int16{7, 8, 9} {
				gotO, gotC := stableFetch(t, k, v, true, group, topic, both)
				require.Equal(t, offsets, gotO, "%s: fetcher %d, v%d require_stable", what, i, v)
				require.Equal(t, codes, gotC, "%s: fetcher %d, v%d require_stable", what, i, v)
				// Topics null: every partition with a committed offset.
				gotO, gotC = stableFetch(t, k, v, true, group, topic, nil)
				require.Equal(t, offsets, gotO, "%s: fetcher %d, v%d require_stable, every partition", what, i, v)
				require.Equal(t, codes, gotC, "%s: fetcher %d, v%d require_stable, every partition", what, i, v)
			}
		}
	}
	committed := func(what string, want map[int32]int64) {
		t.Helper()
		for i, k := range fetchers {
			for _, v := range []int16{6, 7, 8} {
				gotO, gotC := stableFetch(t, k, v, false, group, topic, both)
				require.Equal(t, want, gotO, "%s: fetcher %d, v%d without require_stable: the committed offsets", what, i, v)
				require.Equal(t, map[int32]int16{0: 0, 1: 0}, gotC)
			}
		}
	}

	// The offsets before: 3 and 7, committed by a first transaction.
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	require.Equal(t, map[int32]int16{0: 0, 1: 0}, x.commitOffsets(groupNode, group, "", -1, topic, map[int32]int64{0: 3, 1: 7}))
	require.Equal(t, int16(0), x.end(owner, true))
	expect("nothing open", map[int32]int64{0: 3, 1: 7}, map[int32]int16{0: 0, 1: 0})

	// An open transaction's offset 5 of partition 0.
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(groupNode, group, "", -1, topic, map[int32]int64{0: 5}))
	unstable := kerr.UnstableOffsetCommit.Code
	expect("open", map[int32]int64{0: -1, 1: 7}, map[int32]int16{0: unstable, 1: 0})
	committed("open", map[int32]int64{0: 3, 1: 7})
	require.Equal(t, int16(0), x.end(owner, true))
	expect("committed", map[int32]int64{0: 5, 1: 7}, map[int32]int16{0: 0, 1: 0})

	// An aborted one's offset 9 is never the answer.
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(groupNode, group, "", -1, topic, map[int32]int64{0: 9}))
	expect("open again", map[int32]int64{0: -1, 1: 7}, map[int32]int16{0: unstable, 1: 0})
	require.Equal(t, int16(0), x.end(owner, false))
	expect("aborted", map[int32]int64{0: 5, 1: 7}, map[int32]int16{0: 0, 1: 0})
}

func TestTxnRequireStableSeesOpenTransactionsOffsets(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("in")
	k := dial(t, e.addr)
	checkRequireStable(t, k, k, []*kclient{k, dial(t, e.addr)}, mustInitTxn(t, k, "tx"), "billing")
}

func TestTxnRequireStableForgetsAnExpiredTransaction(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("in")
	k := dial(t, e.addr)
	resp, x := initTxn(t, k, "tx", 1_000)
	require.Equal(t, int16(0), resp.ErrorCode)
	require.Equal(t, int16(0), x.addOffsets(k, "billing"))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(k, "billing", "", -1, "in", map[int32]int64{0: 5}))
	_, codes := stableFetch(t, k, 7, true, "billing", "in", []int32{0})
	require.Equal(t, kerr.UnstableOffsetCommit.Code, codes[0])
	e.clock.Advance(2 * 1_000_000_000)
	require.Eventually(t, func() bool {
		e.n.txns.Sweep()
		offsets, codes := stableFetch(t, k, 7, true, "billing", "in", []int32{0})
		return codes[0] == 0 && offsets[0] == -1
	}, 5e9, 1e7, "an expired transaction's offset is dropped, and with it the partition's instability")
}

func TestClusterTxnRequireStableSeesOffsetsStagedElsewhere(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("in", 2)
	live := []int32{1, 2, 3}
	id := groupOwnedBy(t, live, 2, "txs")
	group := groupOwnedBy(t, live, 3, "txsg")
	x := mustInitTxn(t, e.k[1], id)
	checkRequireStable(t, e.k[1], e.k[2], e.k, x, group)
}

// A transaction's commit landing between the reads of the store an
// OffsetFetch with require_stable makes (cluster mode: the open
// transactions' index and rows, the committed offsets) is answered the
// committed offset or UNSTABLE_OFFSET_COMMIT, never the offset before the
// commit. The test holds the fetch's second read of those keys at Queen
// until the real EndTxn has committed through the transaction's owner.
// With the committed offsets read first, the fetch answered -1 with no
// error (the group's first commit): a librdkafka consumer then applies
// auto.offset.reset and copies again what it committed.
func TestClusterTxnRequireStableAcrossACommitLanding(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("in", 1)
	live := []int32{1, 2, 3}
	id := groupOwnedBy(t, live, 2, "txs")
	group := groupOwnedBy(t, live, 3, "txsg")
	x := mustInitTxn(t, e.k[1], id)
	require.Equal(t, int16(0), x.addOffsets(e.k[1], group))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(e.k[2], group, "", -1, "in", map[int32]int64{0: 40}))

	// The fetch's reads: any KV call naming the group's offsets, its open
	// transactions' index, or the transaction's row.
	keys := []string{queen.GroupOffsetPrefix(group), queen.TxnPendingGroupPrefix(group), queen.TxnKey(id) + `"`}
	var armed atomic.Bool
	var reads atomic.Int32
	land, landed := make(chan struct{}), make(chan struct{})
	e.fq.setFault(func(r *http.Request) (int, string, string) {
		if !armed.Load() || r.URL.Path != "/api/v1/kv" {
			return 0, "", ""
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		named := false
		for _, k := range keys {
			named = named || strings.Contains(string(body), k)
		}
		if named && reads.Add(1) == 2 && armed.CompareAndSwap(true, false) {
			close(land)
			select {
			case <-landed:
			case <-time.After(20 * time.Second):
			}
		}
		return 0, "", ""
	})
	t.Cleanup(func() { e.fq.setFault(nil) })

	k := e.k[0]
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.RequireStable = 8, true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = "in", []int32{0}
	g.Topics = append(g.Topics, gt)
	req.Groups = append(req.Groups, g)
	armed.Store(true)
	want := k.send(req)
	select {
	case <-land:
	case <-time.After(20 * time.Second):
		t.Fatalf("the fetch made %d reads of the group's keys, not 2", reads.Load())
	}
	require.Equal(t, int16(0), x.end(e.k[1], true), "EndTxn(commit) between the fetch's reads")
	close(landed)
	got, resp := k.recv(req)
	require.Equal(t, want, got)
	r := resp.(*kmsg.OffsetFetchResponse)
	require.Len(t, r.Groups, 1)
	require.Len(t, r.Groups[0].Topics, 1)
	p := r.Groups[0].Topics[0].Partitions[0]
	ok := p.ErrorCode == 0 && p.Offset == 40 || p.ErrorCode == kerr.UnstableOffsetCommit.Code && p.Offset == -1
	require.True(t, ok, "answered offset %d, code %d; want 40, or UNSTABLE_OFFSET_COMMIT", p.Offset, p.ErrorCode)
	require.Equal(t, int64(40), e.offset(t, group, "in", 0), "the commit landed")
}
