package e2e

import (
	"testing"

	"github.com/queen-mq/queen-kafka/e2e/internal/staticgroup"
)

// testGroupStatic: static membership (KIP-345) through the facade binary
// with franz-go at the versions it negotiates (JoinGroup v9 and its
// siblings): three static members, a rolling restart of all three that
// rebalances nothing (each restarted member is handed its old partitions
// in the same generation, the others see no revocation), a commit read
// back, and a duplicate instance id that fences the running member.
func testGroupStatic(t *testing.T, tg target) {
	const parts = 6
	topic, group := uniq("grp-static"), uniq("g-static")
	createTopic(t, tg, topic, parts, nil)
	staticgroup.Run(t, tg.bootstrap, group, topic, parts, nil)
}
