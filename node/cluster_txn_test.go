package node

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/envelope"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// Transactions in cluster mode (issue 9), raw requests over TCP: the
// transactional id's owner coordinates, records are staged in Queen by the
// node that received them and offsets by the group's coordinator, and the
// owner's EndTxn(commit) lands all of it as one Queen transaction.

// clusterTxnEnv is three served cluster nodes over one dev Queen, each with
// the variables of extra too.
type clusterTxnEnv struct {
	fq    *devQueen
	nodes []*Node
	k     []*kclient // a connection to each node, by node id - 1
	addr  []string
}

func newClusterTxnEnv(t *testing.T, extra ...map[string]string) *clusterTxnEnv {
	t.Helper()
	fq, url := newDevQueen(t)
	e := &clusterTxnEnv{fq: fq}
	for id := 1; id <= 3; id++ {
		n := joinedNode(t, url, id, extra...)
		e.nodes = append(e.nodes, n)
		e.addr = append(e.addr, serveTestNode(t, n))
		e.k = append(e.k, dial(t, e.addr[id-1]))
	}
	waitView(t, []int32{1, 2, 3}, e.nodes...)
	return e
}

// values is what Queen holds of topic[p] past the native record addQueue
// put at offset 0.
func (e *clusterTxnEnv) values(t *testing.T, topic string, p int32) []string {
	t.Helper()
	rs, err := e.fq.q.Fetch(context.Background(), queen.FetchRequest{Entries: []queen.FetchEntry{{Queue: topic, Partition: strconv.Itoa(int(p)), Offset: 1, MaxBytes: 8 << 20}}})
	require.NoError(t, err)
	var vs []string
	for _, r := range rs[0].Records {
		vs = append(vs, string(envelope.DecodePayload(r.Payload, queen.ParseTS(r.TS)).Value))
	}
	return vs
}

// offset is the committed offset of group on topic[p], -1 for none.
func (e *clusterTxnEnv) offset(t *testing.T, group, topic string, p int32) int64 {
	t.Helper()
	res, err := e.fq.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetMany, NS: queen.Namespace, Keys: []string{queen.GroupOffsetKey(group, topic, p)}}})
	require.NoError(t, err)
	if len(res[0].Rows) == 0 {
		return -1
	}
	var v struct{ Offset int64 }
	require.NoError(t, json.Unmarshal(res[0].Rows[0].Value, &v))
	return v.Offset
}

// stageRows is how many rows Queen holds under prefix.
func (e *clusterTxnEnv) stageRows(t *testing.T, prefix string) int {
	t.Helper()
	res, err := e.fq.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpGetPrefix, NS: queen.Namespace, Prefix: prefix, Limit: 1000, KeysOnly: true}})
	require.NoError(t, err)
	return len(res[0].Rows)
}

func TestClusterTxnCommitsRecordsStagedAtOtherNodes(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 2)
	e.fq.addQueue("in", 1)
	live := []int32{1, 2, 3}
	id := groupOwnedBy(t, live, 2, "txc")
	group := groupOwnedBy(t, live, 3, "txg")
	owner, other, groupNode := e.k[1], e.k[0], e.k[2]

	for i, n := range e.nodes {
		fc := findCoordinator(t, n, id, 1)
		require.Equal(t, int16(0), fc.ErrorCode, "node %d", i+1)
		require.Equal(t, int32(2), fc.NodeID, "node %d names the ring's owner", i+1)
	}
	resp, _ := initTxn(t, other, id, 60_000)
	require.Equal(t, kerr.NotCoordinator.Code, resp.ErrorCode, "InitProducerId away from the owner")
	x := mustInitTxn(t, owner, id)

	// Away from the owner every coordinator request is NOT_COORDINATOR.
	require.Equal(t, []int16{kerr.NotCoordinator.Code}, x.add(other, "out", 0))
	require.Equal(t, kerr.NotCoordinator.Code, x.addOffsets(other, group))
	require.Equal(t, kerr.NotCoordinator.Code, x.end(other, true))

	// Before the transaction opens, no node stages for it.
	code, _ := x.produce(other, "out", 0, "early")
	require.Equal(t, kerr.InvalidTxnState.Code, code)

	x.mustAdd(owner, "out", 0, 1)
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	x.mustProduce(other, "out", 0, "a", "b")
	x.mustProduce(groupNode, "out", 1, "c")
	x.mustProduce(other, "out", 0, "d")
	// A retried batch (same sequence) through another node is staged once.
	c, _ := x.produceAt(groupNode, "out", 0, 0, "a", "b")
	require.Equal(t, int16(0), c)
	require.Equal(t, map[int32]int16{0: kerr.NotCoordinator.Code}, x.commitOffsets(other, group, "", -1, "in", map[int32]int64{0: 7}),
		"TxnOffsetCommit goes to the group's coordinator")
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(groupNode, group, "", -1, "in", map[int32]int64{0: 7}))
	require.Empty(t, e.values(t, "out", 0), "nothing of an open transaction is in the log")
	require.Equal(t, int64(-1), e.offset(t, group, "in", 0))

	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, []string{"a", "b", "d"}, e.values(t, "out", 0))
	require.Equal(t, []string{"c"}, e.values(t, "out", 1))
	require.Equal(t, int64(7), e.offset(t, group, "in", 0))
	require.Equal(t, int16(0), x.end(owner, true), "a repeated commit is answered 0")

	// After the commit no node stages into the decided transaction.
	code, _ = x.produce(other, "out", 0, "late")
	require.Equal(t, kerr.InvalidTxnState.Code, code)

	// An aborted transaction writes nothing.
	x.mustAdd(owner, "out", 0)
	x.mustProduce(other, "out", 0, "gone")
	require.Equal(t, int16(0), x.end(owner, false))
	require.Equal(t, []string{"a", "b", "d"}, e.values(t, "out", 0))
	code, _ = x.produce(other, "out", 0, "after-abort")
	require.Equal(t, kerr.InvalidTxnState.Code, code)

	// The group's coordinator cached the row of an earlier transaction:
	// the offsets still go to the open one.
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(groupNode, group, "", -1, "in", map[int32]int64{0: 9}))
	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, int64(9), e.offset(t, group, "in", 0))
}

// A transaction whose owner forgot it (a restart, an ownership move: the
// binding is dropped) is loaded from its qk:txn: row by the next request,
// and its commit lands what the nodes staged in Queen; a newer epoch fences
// what the old one staged.
func TestClusterTxnResumedCommitLandsAfterTheOwnerForgot(t *testing.T) {
	e := newClusterTxnEnv(t)
	e.fq.addQueue("out", 2)
	id := groupOwnedBy(t, []int32{1, 2, 3}, 1, "txr")
	owner, other := e.k[0], e.k[1]
	x := mustInitTxn(t, owner, id)
	x.mustAdd(owner, "out", 0)
	x.mustProduce(other, "out", 0, "kept-1", "kept-2")

	e.nodes[0].txns.DropUnowned(func(string) bool { return false }) // as a restart or a move leaves it
	require.Equal(t, 0, e.nodes[0].txns.Held())
	x.mustProduce(other, "out", 0, "kept-3")
	require.Equal(t, int16(0), x.end(dial(t, e.addr[0]), true), "a resumed commit from a new connection")
	require.Equal(t, []string{"kept-1", "kept-2", "kept-3"}, e.values(t, "out", 0))

	// The next transaction, fenced by a new epoch before it commits.
	x.mustAdd(owner, "out", 1)
	x.mustProduce(other, "out", 1, "fenced")
	y := mustInitTxn(t, owner, id)
	require.Equal(t, x.pid, y.pid)
	require.Equal(t, x.epoch+1, y.epoch)
	code, _ := x.produce(other, "out", 1, "zombie")
	require.Equal(t, kerr.ProducerFenced.Code, code)
	require.Equal(t, kerr.ProducerFenced.Code, x.end(owner, true))
	require.Empty(t, e.values(t, "out", 1))
	// The committed transaction's rows are cleaned up; the fenced one's
	// (and a write a stale cache sent under a decided number) are left to
	// their ttl, unreachable by any commit.
	committed := queen.TxnStagePrefix(id, x.pid, x.epoch, 1) + "r:out:0:"
	require.Eventually(t, func() bool { return e.stageRows(t, committed) == 0 }, 10*time.Second, 20*time.Millisecond)
	require.Positive(t, e.stageRows(t, queen.TxnStagePrefix(id, x.pid, x.epoch, 2)), "the fenced transaction's rows")
}

// TestClusterNodeThatCannotReachKVSendsProducersAway: while one node's KV
// calls fail (its heartbeat with them), it advertises none of the
// partitions as its own, though it still lists itself as a broker, and it
// answers a transactional Produce NOT_LEADER_OR_FOLLOWER at once, without
// waiting on the KV stage it cannot write: the producer refreshes metadata
// and stages at a survivor, so its transaction is not run past its timeout
// by one sick node (issue 9 (c)). Once a heartbeat succeeds it leads again.
func TestClusterNodeThatCannotReachKVSendsProducersAway(t *testing.T) {
	e := newClusterTxnEnv(t)
	const parts = 12
	e.fq.addQueue("out", parts)
	n1 := e.nodes[0]
	leads := func(n *Node, self int32) (mine []int32) {
		for p := range int32(parts) {
			if l, _ := n.topo.LeaderFor("out", p); l == self {
				mine = append(mine, p)
			}
		}
		return mine
	}
	mine := leads(n1, 1)
	require.NotEmpty(t, mine, "node 1 leads some of %d partitions on a ring of three", parts)

	id := groupOwnedBy(t, []int32{1, 2, 3}, 2, "away")
	owner := e.k[1]
	x := mustInitTxn(t, owner, id)
	all := make([]int32, parts)
	for p := range all {
		all[p] = int32(p)
	}
	x.mustAdd(owner, "out", all...)
	// Through node 1 while it is healthy, which also has it hold the
	// topic's config (read from KV) as it would in a running cluster.
	for _, p := range mine {
		x.mustProduce(e.k[0], "out", p, "before")
	}

	e.fq.injectFault(dev.FaultRule{Route: "kv", Token: "node-1", Status: 503})
	require.Eventually(t, func() bool { return !n1.cluster.session().Healthy() }, 5*time.Second, 10*time.Millisecond,
		"node 1 still healthy with every KV call failing")
	require.Empty(t, leads(n1, 1), "a node that cannot vouch for its membership advertises no partition as its own")
	require.True(t, slices.ContainsFunc(n1.topo.Brokers(), func(b kmsg.MetadataResponseBroker) bool { return b.NodeID == 1 }),
		"it still lists itself as a broker")
	for _, p := range mine {
		code, _ := x.produce(e.k[0], "out", p, "via-1")
		require.Equal(t, kerr.NotLeaderForPartition.Code, code, "transactional produce to %d at the sick node: %v", p, kerr.ErrorForCode(code))
		x.mustProduce(e.k[2], "out", p, "via-3")
	}

	e.fq.injectFault() // no rules
	require.Eventually(t, func() bool { return n1.cluster.session().Healthy() }, 5*time.Second, 10*time.Millisecond,
		"node 1 did not recover after KV returned")
	require.Equal(t, mine, leads(n1, 1), "healthy again, it leads its partitions again")
	x.mustProduce(e.k[0], "out", mine[0], "via-1-again")
	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, []string{"before", "via-3", "via-1-again"}, e.values(t, "out", mine[0]))
}

// TestClusterTxnCapsForgetDecidedTransactions: a staging node hears that a
// transaction was committed only by reading its row again, so its caps must
// not go on counting a decided transaction's records: the next transaction
// of the same id through the same node is not refused past
// QUEEN_KAFKA_TXN_MAX_RECORDS, and transactions that each fit, committed one
// after another through one node, are not refused past
// QUEEN_KAFKA_TXN_MAX_STAGED_BYTES, whether one id commits them all or each
// has its own (the node then re-reads the rows of the ids it holds stage
// portions of before refusing).
func TestClusterTxnCapsForgetDecidedTransactions(t *testing.T) {
	t.Run("records, one id", func(t *testing.T) {
		e := newClusterTxnEnv(t, map[string]string{"QUEEN_KAFKA_TXN_MAX_RECORDS": "3"})
		e.fq.addQueue("out", 2)
		owner, n2 := e.k[0], e.k[1]
		x := mustInitTxn(t, owner, groupOwnedBy(t, []int32{1, 2, 3}, 1, "txrec"))
		for _, vs := range [][]string{{"a", "b"}, {"c", "d"}} {
			x.mustAdd(owner, "out", 0)
			x.mustProduce(n2, "out", 0, vs...)
			require.Equal(t, int16(0), x.end(owner, true))
		}
		require.Equal(t, []string{"a", "b", "c", "d"}, e.values(t, "out", 0))
	})
	staged := map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "1000", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "2000"}
	t.Run("staged bytes, one id", func(t *testing.T) {
		e := newClusterTxnEnv(t, staged)
		e.fq.addQueue("out", 2)
		owner, n2 := e.k[0], e.k[1]
		x := mustInitTxn(t, owner, groupOwnedBy(t, []int32{1, 2, 3}, 1, "txone"))
		for i := range 6 {
			x.mustAdd(owner, "out", 0)
			x.mustProduce(n2, "out", 0, strings.Repeat("v", 600))
			require.Equal(t, int16(0), x.end(owner, true), "transaction %d", i)
		}
		require.Len(t, e.values(t, "out", 0), 6)
	})
	t.Run("staged bytes, an id each", func(t *testing.T) {
		e := newClusterTxnEnv(t, staged)
		e.fq.addQueue("out", 2)
		owner, n2 := e.k[0], e.k[1]
		for i := range 6 {
			x := mustInitTxn(t, owner, groupOwnedBy(t, []int32{1, 2, 3}, 1, "txeach"+strconv.Itoa(i)+"-"))
			x.mustAdd(owner, "out", 0)
			x.mustProduce(n2, "out", 0, strings.Repeat("v", 600))
			require.Equal(t, int16(0), x.end(owner, true), "transaction %d", i)
		}
		require.Len(t, e.values(t, "out", 0), 6)
	})
}

// A group's coordinator whose fence another node has claimed (what that
// node's join does while the live set converges: two nodes each believing
// they own the group, each with its own members) refuses its members'
// TxnOffsetCommit NOT_COORDINATOR and stages nothing more, and drops the
// group. Before the staging call carried the fence, a member copying
// through transactions only (franz-go's GroupTransactSession) committed on
// beside the new owner's members, and both copied the same input (the
// transactional checker's duplicates).
func TestClusterTxnOffsetCommitChecksTheGroupFence(t *testing.T) {
	e := newClusterTxnEnv(t, map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
	e.fq.addQueue("in", 1)
	live := []int32{1, 2, 3}
	id := groupOwnedBy(t, live, 2, "txf")
	group := groupOwnedBy(t, live, 3, "txfg")
	owner, groupNode := e.k[1], e.k[2]

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 3, group, "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10_000, 10_000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0}}}
	j := groupNode.roundTrip(join).(*kmsg.JoinGroupResponse)
	require.Equal(t, int16(0), j.ErrorCode)
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 2, group, j.MemberID, j.Generation
	sync.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: j.MemberID, MemberAssignment: []byte{0}}}
	require.Equal(t, int16(0), groupNode.roundTrip(sync).(*kmsg.SyncGroupResponse).ErrorCode)

	x := mustInitTxn(t, owner, id)
	require.Equal(t, int16(0), x.addOffsets(owner, group))
	require.Equal(t, map[int32]int16{0: 0}, x.commitOffsets(groupNode, group, j.MemberID, j.Generation, "in", map[int32]int64{0: 5}))

	// Node 1 claims the group's fence, as its join would.
	claim, err := json.Marshal(queen.FenceValue{Node: 1, Incarnation: "elsewhere", Generation: j.Generation + 1, TS: time.Now().UnixMilli()})
	require.NoError(t, err)
	_, err = e.fq.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: queen.FenceKey(group), Value: claim, Forever: true}})
	require.NoError(t, err)

	require.Equal(t, map[int32]int16{0: kerr.NotCoordinator.Code}, x.commitOffsets(groupNode, group, j.MemberID, j.Generation, "in", map[int32]int64{0: 9}),
		"the node that lost the group's fence stages nothing for its member")
	require.Equal(t, map[int32]int16{0: kerr.UnknownMemberID.Code}, x.commitOffsets(groupNode, group, j.MemberID, j.Generation, "in", map[int32]int64{0: 9}),
		"and has dropped the group")
	require.Equal(t, int16(0), x.end(owner, true))
	require.Equal(t, int64(5), e.offset(t, group, "in", 0), "only what was staged under the fence is committed")
}
