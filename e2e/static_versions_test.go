package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/e2e/internal/staticgroup"
)

// staticSteps pin franz-go to each step of the static-membership window:
// JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch
// and DescribeGroups at the versions where a field lands.
var staticSteps = []struct {
	name                                        string
	join, sync, hb, leave, commit, fetch, descr int16
}{
	{"instance-id", 5, 3, 3, 3, 7, 7, 4},
	{"flexible", 6, 4, 4, 4, 8, 8, 5},
	{"protocol-type", 7, 5, 4, 4, 8, 8, 5},
	{"reason", 8, 5, 4, 5, 8, 8, 5},
	{"skip-assignment", 9, 5, 4, 5, 9, 9, 5},
	{"topic-ids", 9, 5, 4, 5, 10, 10, 6}, // DescribeGroups v6: KIP-1043
}

// TestKgoStaticMembership runs staticgroup's scenario (three franz-go
// static members; a rolling restart that rebalances nothing; a commit read
// back; a duplicate instance id fenced) with franz-go pinned at every step
// of the versions that carry group_instance_id, against a facade binary of
// its own.
func TestKgoStaticMembership(t *testing.T) {
	t.Parallel()
	dev, _ := sharedEnv(t)
	// Each franz-go client holds a few connections; a step holds seven.
	fac := startFacade(t, dev, map[string]string{"QUEEN_KAFKA_MAX_CONNECTIONS": "256"})
	addr := fac.addr
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const parts = 6
	topic := uniq("static-in")
	adm := kadm.NewClient(newKgo(t, []string{addr}))
	_, err := adm.CreateTopic(ctx, parts, 1, nil, topic)
	require.NoError(t, err)

	for _, st := range staticSteps {
		t.Run(st.name, func(t *testing.T) {
			v := kversion.Stable()
			for _, kv := range [][2]int16{
				{kmsg.JoinGroup.Int16(), st.join}, {kmsg.SyncGroup.Int16(), st.sync}, {kmsg.Heartbeat.Int16(), st.hb},
				{kmsg.LeaveGroup.Int16(), st.leave}, {kmsg.OffsetCommit.Int16(), st.commit}, {kmsg.OffsetFetch.Int16(), st.fetch},
				{kmsg.DescribeGroups.Int16(), st.descr},
			} {
				v.SetMaxKeyVersion(kv[0], kv[1])
			}
			staticgroup.Run(t, []string{addr}, uniq("static-"+st.name), topic, parts, v)
		})
	}
}
