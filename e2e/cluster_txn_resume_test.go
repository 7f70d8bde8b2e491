package e2e

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/queen-mq/queen-kafka/hashring"
	"github.com/queen-mq/queen-kafka/producer"
)

// TestClusterTxnResumedCommitAfterRestart (issue 9): in cluster mode a
// transaction's stage lives in Queen, so the commit of a transaction whose
// holding node died lands, where single mode answers it INVALID_TXN_STATE
// with nothing written (TestTxnFacadeRestart, seed 003). One client opens a
// transaction on the wire at its owner, node 1, stages records at every node
// (node 1 included), and goes away; node 1 is killed -9. Then a new
// connection commits with the first client's producer id and epoch:
//   - restarted: node 1 comes back with nothing in memory and owns the id again;
//   - moved: node 1 stays dead and the id's owner is a survivor.
//
// Either way the commit is answered 0 and every staged record is stored
// exactly once, with its dedup key; nothing was visible before it.
func TestClusterTxnResumedCommitAfterRestart(t *testing.T) {
	for _, restart := range []bool{true, false} {
		name := map[bool]string{true: "restarted", false: "moved"}[restart]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := newTestCluster(t, clusterOpts{nodes: 3})
			topic := uniq("ctx-resume")
			c.createTopic(t, topic, 3)
			ring := hashring.New([]int32{1, 2, 3})
			id := ""
			for i := 0; id == ""; i++ {
				cand := uniq("tid-resume") + "-" + strconv.Itoa(i)
				if o, _ := ring.Owner(cand); o == 1 {
					id = cand
				}
			}

			first := newKgo(t, c.addrs())
			x := initRawTxn(t, first, id, 60000)
			x.mustAddPartitions(first, topic, 0, 1, 2)
			want := map[int32][]string{}
			for p := int32(0); p < 3; p++ {
				for node := 1; node <= 3; node++ { // each partition staged through every node
					v := fmt.Sprintf("%s-p%d-n%d", name, p, node)
					code, base := x.produce(c.pin(t, node), topic, p, v)
					require.Equal(t, int16(0), code, "transactional produce of %s at node %d: %s", v, node, codeName(code))
					require.Equal(t, int64(-1), base)
					want[p] = append(want[p], v)
				}
			}
			first.Close()

			c.node(1).kill()
			live := []int{2, 3}
			if restart {
				require.NoError(t, c.node(1).restart())
				live = []int{1, 2, 3}
				for _, id := range live {
					c.waitBrokers(t, id, []int32{1, 2, 3}, 15*time.Second)
				}
			}
			// Restarted, node 1 owns the id again; moved, a survivor once the
			// others have dropped node 1 (one TTL).
			var owner int32
			eventually(t, 15*time.Second, "the live nodes agree on the id's owner", func() (bool, string) {
				owner = c.agreedOwner(t, id, live...)
				return owner != 0 && (owner == 1) == restart, fmt.Sprintf("owner %d", owner)
			})
			seeds := c.addrs(live...)
			assert.Equal(t, map[int32]int64{0: 0, 1: 0, 2: 0}, endOffsets(t, seeds, topic), "records of an open transaction are in the log")

			pid, epoch := x.pid, x.epoch // the records' own: a v5 commit moves x to the next epoch
			assert.Equal(t, int16(0), x.end(newKgo(t, seeds, kgo.RetryTimeout(30*time.Second)), true),
				"EndTxn(commit) from a new connection after the holding node died (owner now node %d)", owner)
			assert.Equal(t, map[int32]int64{0: 3, 1: 3, 2: 3}, endOffsets(t, seeds, topic), "a committed transaction of 3 per partition")
			for p := int32(0); p < 3; p++ {
				assert.Equal(t, want[p], storedValues(t, c.dev, topic, p), "what Queen holds of %s[%d]", topic, p)
				// Staged at three nodes, each record still carries the dedup
				// key of its producer id, epoch and sequence.
				var keys []string
				for _, r := range c.dev.fetch(t, topic, strconv.Itoa(int(p)), 0).Records {
					keys = append(keys, r.TransactionID)
				}
				assert.Equal(t, producer.DedupKeys(pid, epoch, 0, 3), keys, "the Queen transactionIds of %s[%d]", topic, p)
			}
		})
	}
}
