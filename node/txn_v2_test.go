package node

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/recordbatch"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// KIP-890 (issue 23), raw requests over TCP: the transaction.version
// feature, the windows it opens, and the protocol at EndTxn v5, Produce
// v12 and TxnOffsetCommit v5; and the old protocol's late EndTxn.

// produceV sends values as one transactional batch of x at epoch and
// sequence seq, with Produce at version.
func (x *rawTxn) produceV(k *kclient, version int16, epoch int16, topic string, p int32, seq int32, values ...string) int16 {
	x.t.Helper()
	var recs []kmsg.Record
	for _, v := range values {
		recs = append(recs, kmsg.Record{Value: []byte(v)})
	}
	raw := batchtest.Batch{Attrs: recordbatch.AttrTransactional, Idem: true, PID: x.pid, Epoch: epoch, FirstSeq: seq, FirstTS: 1, Records: recs}.Encode(x.t)
	req := produceReq(version, -1, topic, p, raw)
	req.TransactionID = &x.id
	rp := k.roundTrip(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if rp.ErrorMessage != nil {
		x.t.Logf("produce %s[%d] at epoch %d: %v: %s", topic, p, epoch, kerr.ErrorForCode(rp.ErrorCode), *rp.ErrorMessage)
	}
	return rp.ErrorCode
}

// endV5 is an EndTxn v5 of x's id at pid and epoch: the code and the
// producer id and epoch answered.
func (x *rawTxn) endV5(k *kclient, pid int64, epoch int16, commit bool) (int16, int64, int16) {
	x.t.Helper()
	req := kmsg.NewPtrEndTxnRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = 5, x.id, pid, epoch, commit
	r := k.roundTrip(req).(*kmsg.EndTxnResponse)
	return r.ErrorCode, r.ProducerID, r.ProducerEpoch
}

// commitOffsetsV is a TxnOffsetCommit of x at version and epoch by an
// assign()-only consumer (no member, generation -1).
func (x *rawTxn) commitOffsetsV(k *kclient, version int16, epoch int16, group, topic string, p int32, offset int64) int16 {
	x.t.Helper()
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, x.id, x.pid, epoch
	req.Group, req.Generation = group, -1
	rt := kmsg.NewTxnOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = p, offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return k.roundTrip(req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func window(resp *kmsg.ApiVersionsResponse, key kmsg.Key) int16 {
	for _, k := range resp.ApiKeys {
		if k.ApiKey == key.Int16() {
			return k.MaxVersion
		}
	}
	return -1
}

// QUEEN_KAFKA_TRANSACTION_VERSION is the finalized transaction.version
// ApiVersions v3+ advertises (0 is listed as supported only), and below 2
// it caps EndTxn and TxnOffsetCommit at v4, the old protocol's last.
func TestTransactionVersionFeatureAndWindows(t *testing.T) {
	for _, c := range []struct {
		tv                string
		finalized         int16 // 0: none listed
		endTxn, txnCommit int16
	}{
		{"2", 2, 5, 6},
		{"1", 1, 4, 4},
		{"0", 0, 4, 4},
	} {
		n, _ := newTestNode(t, map[string]string{"QUEEN_KAFKA_TRANSACTION_VERSION": c.tv})
		k := dial(t, serveTestNode(t, n))
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "test", "1"
		resp := k.roundTrip(req).(*kmsg.ApiVersionsResponse)
		require.Equal(t, int16(0), resp.ErrorCode)
		require.Len(t, resp.SupportedFeatures, 1, "tv %s", c.tv)
		require.Equal(t, "transaction.version", resp.SupportedFeatures[0].Name)
		require.Equal(t, [2]int16{0, 2}, [2]int16{resp.SupportedFeatures[0].MinVersion, resp.SupportedFeatures[0].MaxVersion})
		if c.finalized == 0 {
			require.Empty(t, resp.FinalizedFeatures, "tv 0 finalizes nothing")
			require.Equal(t, int64(-1), resp.FinalizedFeaturesEpoch)
		} else {
			require.Len(t, resp.FinalizedFeatures, 1)
			require.Equal(t, c.finalized, resp.FinalizedFeatures[0].MaxVersionLevel, "tv %s", c.tv)
			require.NotEqual(t, int64(-1), resp.FinalizedFeaturesEpoch)
		}
		require.Equal(t, c.endTxn, window(resp, kmsg.EndTxn), "tv %s: EndTxn", c.tv)
		require.Equal(t, c.txnCommit, window(resp, kmsg.TxnOffsetCommit), "tv %s: TxnOffsetCommit", c.tv)
		require.Equal(t, int16(13), window(resp, kmsg.Produce), "tv %s: Produce keeps v13 for everyone else", c.tv)
		// Below v3 no feature is on the wire.
		req.Version = 2
		require.Empty(t, k.roundTrip(req).(*kmsg.ApiVersionsResponse).SupportedFeatures)
	}
}

// The old protocol: an EndTxn(commit) of transaction 1 delayed on its
// connection past the client's retry, which arrives after transaction 2
// opened, is answered as a repeat of transaction 1's commit and neither
// commits nor aborts transaction 2. (Before the guard it committed
// transaction 2's records: see lateEnd.)
func TestTxnLateEndTxnNeverTouchesTheNext(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	old, fresh := dial(t, e.addr), dial(t, e.addr)
	x := mustInitTxn(t, old, "tx")
	x.mustAdd(old, "out", 0)
	x.mustProduce(old, "out", 0, "t1")
	// The client's EndTxn(commit) on old is held by the network; its retry
	// goes through a new connection and lands.
	require.Equal(t, int16(0), x.end(fresh, true))
	require.Equal(t, int16(0), x.end(fresh, true), "a retry of the commit is answered 0")

	// Transaction 2, on the new connection.
	x.mustAdd(fresh, "out", 0)
	x.mustProduce(fresh, "out", 0, "t2")

	// The held EndTxn(commit) arrives now, twice, and an abort too.
	require.Equal(t, int16(0), x.end(old, true), "a late commit of transaction 1 is answered as its repeat")
	require.Equal(t, int16(0), x.end(old, true))
	require.Equal(t, kerr.InvalidTxnState.Code, x.end(old, false), "a late abort of committed transaction 1")
	vs, hw := e.values("out", 0)
	require.Equal(t, []string{"t1"}, vs, "transaction 2 was not committed by the late EndTxn")
	require.Equal(t, int64(1), hw)

	// Transaction 2 is still open and its own producer decides it.
	x.mustProduce(fresh, "out", 0, "t2b")
	require.Equal(t, int16(0), x.end(fresh, false))
	vs, _ = e.values("out", 0)
	require.Equal(t, []string{"t1"}, vs)

	// A connection opened after a transaction began (a reconnect) ends it.
	x.mustAdd(fresh, "out", 0)
	x.mustProduce(fresh, "out", 0, "t3")
	later := dial(t, e.addr)
	require.Equal(t, int16(0), x.end(later, true))
	vs, _ = e.values("out", 0)
	require.Equal(t, []string{"t1", "t3"}, vs)
}

// KIP-890 at the node: Produce v12 adds its partition and TxnOffsetCommit
// v5 its group, EndTxn v5 bumps the epoch at every decision and answers
// it, a retry of the decision is answered what it granted, and the epoch
// left behind is fenced at Produce and EndTxn: a late EndTxn of
// transaction 1 cannot decide transaction 2.
func TestTxnV2RawRequests(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("out")
	e.createTopic("in")
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx2")
	pid := x.pid
	require.Equal(t, int16(0), x.epoch)

	require.Equal(t, int16(0), x.produceV(k, 12, 0, "out", 0, 0, "a", "b"), "Produce v12 adds the partition itself")
	require.Equal(t, int16(0), x.commitOffsetsV(k, 5, 0, "g2", "in", 0, 7), "TxnOffsetCommit v5 adds the group itself")
	code, p, ep := x.endV5(k, pid, 0, true)
	require.Equal(t, [3]int64{0, pid, 1}, [3]int64{int64(code), p, int64(ep)}, "a commit moves to epoch 1")
	vs, _ := e.values("out", 0)
	require.Equal(t, []string{"a", "b"}, vs)

	// Retries of the decision, and what is not one.
	code, p, ep = x.endV5(k, pid, 0, true)
	require.Equal(t, [3]int64{0, pid, 1}, [3]int64{int64(code), p, int64(ep)}, "a retried commit is answered what it granted")
	code, _, _ = x.endV5(k, pid, 0, false)
	require.Equal(t, kerr.InvalidTxnState.Code, code, "an abort of the committed transaction")
	code, _, _ = x.endV5(k, pid, 1, true)
	require.Equal(t, kerr.InvalidTxnState.Code, code, "a commit with nothing open")

	// The epoch left behind is fenced at Produce; the new one starts at
	// sequence 0.
	require.Equal(t, kerr.ProducerFenced.Code, x.produceV(k, 12, 0, "out", 0, 2, "late"))
	require.Equal(t, int16(0), x.produceV(k, 12, 1, "out", 0, 0, "c"))
	// A late EndTxn of transaction 1 is fenced and leaves transaction 2 open.
	code, _, _ = x.endV5(k, pid, 0, true)
	require.Equal(t, kerr.ProducerFenced.Code, code)
	vs, _ = e.values("out", 0)
	require.Equal(t, []string{"a", "b"}, vs, "the late EndTxn committed nothing")
	code, p, ep = x.endV5(k, pid, 1, false)
	require.Equal(t, [3]int64{0, pid, 2}, [3]int64{int64(code), p, int64(ep)}, "an abort moves to epoch 2")
	code, p, ep = x.endV5(k, pid, 1, false)
	require.Equal(t, [3]int64{0, pid, 2}, [3]int64{int64(code), p, int64(ep)}, "a retried abort")
	code, p, ep = x.endV5(k, pid, 2, false)
	require.Equal(t, [3]int64{0, pid, 3}, [3]int64{int64(code), p, int64(ep)}, "an abort of nothing moves too")
	vs, _ = e.values("out", 0)
	require.Equal(t, []string{"a", "b"}, vs)
	dp := describeProducers(t, k, "out", 0)
	require.Equal(t, int16(0), dp.ErrorCode)
	require.Len(t, dp.ActiveProducers, 1)
	require.Equal(t, [3]int64{pid, 1, 0}, [3]int64{dp.ActiveProducers[0].ProducerID, int64(dp.ActiveProducers[0].ProducerEpoch), int64(dp.ActiveProducers[0].LastSequence)},
		"the window of epoch 1, its last sequence 0")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, describeProducers(t, k, "out", 99).ErrorCode)
	code, _, _ = x.endV5(k, pid, 7, true)
	require.Equal(t, kerr.ProducerFenced.Code, code, "an epoch never granted")
	code, _, _ = x.endV5(k, pid+1, 3, true)
	require.Equal(t, kerr.InvalidProducerIDMapping.Code, code)
}

// With transaction.version below 2 a Produce v12 does not add its
// partition: AddPartitionsToTxn stays required.
func TestTxnV1ProduceV12NeedsAddPartitions(t *testing.T) {
	e := newTxnEnv(t, map[string]string{"QUEEN_KAFKA_TRANSACTION_VERSION": "1"})
	e.createTopic("out")
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx1")
	require.Equal(t, kerr.InvalidTxnState.Code, x.produceV(k, 12, 0, "out", 0, 0, "a"))
	x.mustAdd(k, "out", 0)
	require.Equal(t, int16(0), x.produceV(k, 12, 0, "out", 0, 0, "a"))
	require.Equal(t, int16(0), x.end(k, true))
	vs, _ := e.values("out", 0)
	require.Equal(t, []string{"a"}, vs)
}

func listTxns(t *testing.T, k *kclient) map[string]kmsg.ListTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrListTransactionsRequest()
	req.Version = 2
	resp := k.roundTrip(req).(*kmsg.ListTransactionsResponse)
	require.Equal(t, int16(0), resp.ErrorCode)
	out := map[string]kmsg.ListTransactionsResponseTransactionState{}
	for _, s := range resp.TransactionStates {
		out[s.TransactionalID] = s
	}
	return out
}

func describeTxn(t *testing.T, k *kclient, id string) kmsg.DescribeTransactionsResponseTransactionState {
	t.Helper()
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	return k.roundTrip(req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
}

func describeProducers(t *testing.T, k *kclient, topic string, p int32) kmsg.DescribeProducersResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrDescribeProducersRequest()
	rt := kmsg.NewDescribeProducersRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{p}
	req.Topics = append(req.Topics, rt)
	return k.roundTrip(req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0]
}

// Cluster mode under KIP-890: a Produce v12 at a partition leader that is
// not the owner opens the transaction (and TxnOffsetCommit v5 at the
// group's coordinator joins it); every node lists and describes it from
// Queen; the owner's EndTxn v5 commits it and bumps the epoch in the row,
// which fences a late Produce at any node and a late EndTxn; a retried
// decision is answered from the row after the owner forgot the id.
func TestClusterTxnV2AndTheAdminViews(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 6)
	e.fq.addQueue("in", 1)
	live := []int32{1, 2, 3}
	id := groupOwnedBy(t, live, 1, "tv2")
	group := groupOwnedBy(t, live, 3, "tv2g")
	owner := e.k[0]
	p := int32(-1)
	for q := range int32(6) {
		if l, _ := e.nodes[0].topo.LeaderFor("out", q); l == 2 {
			p = q
			break
		}
	}
	require.NotEqual(t, int32(-1), p, "node 2 leads a partition of out")
	leader := e.k[1]

	x := mustInitTxn(t, owner, id)
	pid := x.pid
	require.Equal(t, int16(0), x.produceV(leader, 12, 0, "out", p, 0, "a", "b"), "Produce v12 at a leader opens the transaction")
	require.Equal(t, int16(0), x.commitOffsetsV(e.k[2], 5, 0, group, "in", 0, 7))

	for i, k := range e.k {
		l := listTxns(t, k)
		require.Equal(t, "Ongoing", l[id].TransactionState, "node %d lists it", i+1)
		require.Equal(t, pid, l[id].ProducerID)
		d := describeTxn(t, k, id)
		require.Equal(t, int16(0), d.ErrorCode, "node %d", i+1)
		require.Equal(t, "Ongoing", d.State)
		require.Equal(t, [2]int64{pid, 0}, [2]int64{d.ProducerID, int64(d.ProducerEpoch)})
		require.Equal(t, int32(60_000), d.TimeoutMillis)
		require.Positive(t, d.StartTimestamp)
		require.Len(t, d.Topics, 1, "node %d: the partitions staged", i+1)
		require.Equal(t, "out", d.Topics[0].Topic)
		require.Equal(t, []int32{p}, d.Topics[0].Partitions)
		require.Equal(t, kerr.TransactionalIDNotFound.Code, describeTxn(t, k, "no-such-id").ErrorCode)
	}
	dp := describeProducers(t, leader, "out", p)
	require.Equal(t, int16(0), dp.ErrorCode)
	require.Len(t, dp.ActiveProducers, 1)
	require.Equal(t, pid, dp.ActiveProducers[0].ProducerID)
	require.Equal(t, int32(0), dp.ActiveProducers[0].ProducerEpoch)
	require.Equal(t, int32(1), dp.ActiveProducers[0].LastSequence)
	require.Positive(t, dp.ActiveProducers[0].LastTimestamp)
	require.Equal(t, int64(-1), dp.ActiveProducers[0].CurrentTxnStartOffset)
	require.Equal(t, kerr.NotLeaderForPartition.Code, describeProducers(t, owner, "out", p).ErrorCode, "node 1 does not lead it")

	code, np, ne := x.endV5(owner, pid, 0, true)
	require.Equal(t, [3]int64{0, pid, 1}, [3]int64{int64(code), np, int64(ne)})
	require.Equal(t, []string{"a", "b"}, e.values(t, "out", p))
	require.Equal(t, int64(7), e.offset(t, group, "in", 0))
	for i, k := range e.k {
		d := describeTxn(t, k, id)
		require.Equal(t, "CompleteCommit", d.State, "node %d", i+1)
		require.Equal(t, int16(1), d.ProducerEpoch, "node %d reads the bump", i+1)
	}

	// The epoch left behind is fenced at every node.
	for i, k := range e.k {
		require.Equal(t, kerr.ProducerFenced.Code, x.produceV(k, 12, 0, "out", p, 2, "late"), "node %d", i+1)
	}
	// Transaction 2, through node 3; a late EndTxn of transaction 1 cannot
	// decide it.
	require.Equal(t, int16(0), x.produceV(e.k[2], 12, 1, "out", p, 0, "c"))
	code, _, _ = x.endV5(owner, pid, 0, false)
	require.Equal(t, kerr.ProducerFenced.Code, code)
	require.Equal(t, "Ongoing", describeTxn(t, e.k[1], id).State)
	code, _, ne = x.endV5(owner, pid, 1, false)
	require.Equal(t, [2]int64{0, 2}, [2]int64{int64(code), int64(ne)})
	require.Equal(t, []string{"a", "b"}, e.values(t, "out", p), "the aborted transaction wrote nothing")

	// The owner forgets the id (a restart, a move): the abort's retry is
	// answered from the row.
	e.nodes[0].txns.DropUnowned(func(string) bool { return false })
	code, np, ne = x.endV5(dial(t, e.addr[0]), pid, 1, false)
	require.Equal(t, [3]int64{0, pid, 2}, [3]int64{int64(code), np, int64(ne)})
	code, _, _ = x.endV5(owner, pid, 1, true)
	require.Equal(t, kerr.InvalidTxnState.Code, code, "a commit of the aborted transaction")
}

// The old protocol's late EndTxn in cluster mode: the owner holds the
// transaction, records staged at another node, and the guard is the
// owner's.
func TestClusterTxnLateEndTxnNeverTouchesTheNext(t *testing.T) {
	e := newClusterTxnEnv(t, map[string]string{"QUEEN_KAFKA_TRANSACTION_VERSION": "1"})
	e.fq.addQueue("out", 1)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 1, "late")
	old, fresh, other := e.k[0], dial(t, e.addr[0]), e.k[1]
	x := mustInitTxn(t, old, id)
	x.mustAdd(old, "out", 0)
	x.mustProduce(other, "out", 0, "t1")
	require.Equal(t, int16(0), x.end(fresh, true), "the retry through a new connection")
	x.mustAdd(fresh, "out", 0)
	x.mustProduce(other, "out", 0, "t2")
	require.Equal(t, int16(0), x.end(old, true), "the late commit of transaction 1, answered as its repeat")
	require.Equal(t, []string{"t1"}, e.values(t, "out", 0), "transaction 2 untouched")
	require.Equal(t, int16(0), x.end(fresh, false))
	require.Equal(t, []string{"t1"}, e.values(t, "out", 0))
}

// TxnOffsetCommit v6 (KIP-1319) names topics by id: the offset of a known
// id is staged and committed by EndTxn under the topic's name, an id no
// topic has is UNKNOWN_TOPIC_ID on its partitions (nothing staged), and
// the answer names each topic by the id asked.
func TestTxnOffsetCommitV6ByTopicID(t *testing.T) {
	e := newTxnEnv(t, nil)
	e.createTopic("in6")
	id, ghost := e.topicID("in6"), [16]byte{0xde, 0xad}
	k := dial(t, e.addr)
	x := mustInitTxn(t, k, "tx6")

	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 6, x.id, x.pid, x.epoch
	req.Group, req.Generation = "g6", -1
	for _, tid := range [][16]byte{id, ghost} {
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 7
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp := k.roundTrip(req).(*kmsg.TxnOffsetCommitResponse)
	require.Len(t, resp.Topics, 2)
	require.Equal(t, id, resp.Topics[0].TopicID)
	require.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "v6 adds the group itself, as v5")
	require.Equal(t, ghost, resp.Topics[1].TopicID)
	require.Equal(t, kerr.UnknownTopicID.Code, resp.Topics[1].Partitions[0].ErrorCode)
	code, _, _ := x.endV5(k, x.pid, x.epoch, true)
	require.Equal(t, int16(0), code)

	of := kmsg.NewPtrOffsetFetchRequest()
	of.Version = 10
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = "g6" // every committed topic
	of.Groups = append(of.Groups, g)
	fr := k.roundTrip(of).(*kmsg.OffsetFetchResponse)
	require.Len(t, fr.Groups, 1)
	require.Len(t, fr.Groups[0].Topics, 1, "only the known id's offset was committed")
	require.Equal(t, id, fr.Groups[0].Topics[0].TopicID)
	require.Equal(t, int64(7), fr.Groups[0].Topics[0].Partitions[0].Offset)
}
