package node

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/queen-mq/queen-kafka/authz"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// servedEnv is a data env whose node is served on its advertised address,
// with every request's key and version recorded.
func servedEnv(t *testing.T, opts dev.Options) (*dataEnv, string, *recordingObserver) {
	t.Helper()
	addr, env := fixedAddrEnv(t, map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "0"})
	e := newDataEnv(t, opts, env)
	obs := &recordingObserver{}
	e.n.obs = obs
	serveTestNode(t, e.n)
	return e, addr, obs
}

// pinned is a franz-go admin client that speaks key at most at version v.
func pinned(t *testing.T, addr string, key kmsg.Key, v int16) *admin {
	t.Helper()
	return newAdmin(pinnedClient(t, addr, key, v))
}

// versionsSeen are the versions of key the node answered since mark.
func (o *recordingObserver) versionsSeen(key kmsg.Key, mark int) []int16 {
	var vs []int16
	for _, r := range o.requests()[mark:] {
		if r.key == key.Int16() && !slices.Contains(vs, r.version) {
			vs = append(vs, r.version)
		}
	}
	return vs
}

func (o *recordingObserver) mark() int { return len(o.requests()) }

// TestKgoFindCoordinatorEveryVersion: franz-go's batched lookups (v4+,
// one request for several groups) and single lookups (v3) are answered
// with this node for every group and transactional id.
func TestKgoFindCoordinatorEveryVersion(t *testing.T) {
	e, addr, obs := servedEnv(t, dev.Options{})
	_ = e
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host, port := splitHostPort(t, addr)
	for v := int16(3); v <= 6; v++ {
		adm := pinned(t, addr, kmsg.FindCoordinator, v)
		mark := obs.mark()
		for _, rs := range []adminCoordinators{
			adm.FindGroupCoordinators(ctx, "g1", "g2", "g3"),
			adm.FindTxnCoordinators(ctx, "t1", "t2"),
		} {
			require.NoError(t, rs.Error(), "v%d", v)
			for key, r := range rs {
				require.NoError(t, r.Err, "v%d %s", v, key)
				require.Equal(t, int32(0), r.NodeID, "v%d %s", v, key)
				require.Equal(t, host, r.Host, "v%d %s", v, key)
				require.Equal(t, port, r.Port, "v%d %s", v, key)
			}
		}
		require.Equal(t, []int16{v}, obs.versionsSeen(kmsg.FindCoordinator, mark), "negotiated version")
	}
}

// TestKgoListGroupsTypes: kadm's ListGroupsByType request (v5, sent by
// newAdmin) sees the group as classic; a consumer-type filter lists nothing.
func TestKgoListGroupsTypes(t *testing.T) {
	e, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.createTopic("lg")
	adm := pinned(t, addr, kmsg.ListGroups, 5)
	_, err := adm.CommitOffsets(ctx, "committed", offsetsFromRecords(kgo.Record{Topic: "lg", Partition: 0, Offset: 3}))
	require.NoError(t, err)
	mark := obs.mark()
	listed, err := adm.ListGroupsByType(ctx, []string{"classic"})
	require.NoError(t, err)
	require.Contains(t, listed.Groups(), "committed")
	require.Equal(t, "classic", listed["committed"].GroupType)
	require.Equal(t, "Empty", listed["committed"].State)
	listed, err = adm.ListGroupsByType(ctx, []string{"consumer"})
	require.NoError(t, err)
	require.Empty(t, listed)
	require.Equal(t, []int16{5}, obs.versionsSeen(kmsg.ListGroups, mark))
}

// TestKgoListOffsetsSentinels: kadm's max-timestamp, local-log-start and
// latest-tiered listings (sent by newAdmin), and -6 at v11, at every version; a version below
// a sentinel's is UNSUPPORTED_VERSION.
func TestKgoListOffsetsSentinels(t *testing.T) {
	t0 := time.UnixMilli(1787824800000)
	clock := &brokerClock{t: t0}
	e, addr, obs := servedEnv(t, dev.Options{Now: clock.now})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.createTopic("lo")
	for i := 0; i < 4; i++ {
		clock.set(t0.Add(time.Duration(i) * time.Second))
		e.produce("lo", 0, batchtest.Batch{FirstTS: 5, Records: batchtest.SampleRecords()}.Encode(t))
	}
	// lookup is partition p's answer, or its error when v is below since.
	lookup := func(v, since int16, l adminListedOffsets, err error, p int32) adminListed {
		t.Helper()
		require.NoError(t, err, "v%d", v)
		o, ok := l.Lookup("lo", p)
		require.True(t, ok, "v%d partition %d", v, p)
		if v < since {
			require.ErrorIs(t, o.Err, kerr.UnsupportedVersion, "v%d", v)
		} else {
			require.NoError(t, o.Err, "v%d", v)
		}
		return o
	}
	for v := int16(6); v <= 11; v++ {
		cl := pinnedClient(t, addr, kmsg.ListOffsets, v)
		adm := newAdmin(cl)
		mark := obs.mark()
		maxes, err := adm.ListMaxTimestampOffsets(ctx, "lo")
		if m := lookup(v, 7, maxes, err, 0); v >= 7 {
			require.Equal(t, int64(9), m.Offset, "v%d max-timestamp offset", v)
			require.Equal(t, t0.Add(3*time.Second).UnixMilli(), m.Timestamp, "v%d max timestamp", v)
			require.Equal(t, int32(-1), m.LeaderEpoch)
			require.Equal(t, int64(-1), lookup(v, 7, maxes, err, 1).Offset, "v%d empty partition", v)
		}
		local, err := adm.ListLocalLogStartOffsets(ctx, "lo")
		if l := lookup(v, 8, local, err, 0); v >= 8 {
			require.Equal(t, int64(0), l.Offset, "v%d local log start", v)
		}
		tiered, err := adm.ListLatestRemoteOffsets(ctx, "lo")
		if r := lookup(v, 9, tiered, err, 0); v >= 9 {
			require.Equal(t, int64(-1), r.Offset, "v%d latest tiered", v)
		}
		req := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "lo"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -6
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		pending := resp.Topics[0].Partitions[0]
		if v < 11 {
			require.Equal(t, kerr.UnsupportedVersion.Code, pending.ErrorCode, "v%d", v)
		} else {
			require.Equal(t, int16(0), pending.ErrorCode)
			require.Equal(t, int64(-1), pending.Offset, "earliest pending upload")
		}
		require.Equal(t, []int16{v}, obs.versionsSeen(kmsg.ListOffsets, mark), "negotiated version")
	}
}

func splitHostPort(t *testing.T, addr string) (string, int32) {
	t.Helper()
	host, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return host, int32(port)
}

func newKgoClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// pinnedClient is a franz-go client with opts that speaks key at most at
// version v; the test's end closes it.
func pinnedClient(t *testing.T, addr string, key kmsg.Key, v int16, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key.Int16(), v)
	return newKgoClient(t, addr, append([]kgo.Opt{kgo.MaxVersions(vs)}, opts...)...)
}

// TestKgoDescribeCluster: franz-go's DescribeCluster at each version is
// answered with Metadata's broker, cluster id and controller; asking a
// broker endpoint for controllers is Kafka's error for it.
func TestKgoDescribeCluster(t *testing.T) {
	_, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	host, port := splitHostPort(t, addr)
	defer func() {
		// franz-go led every connection with ApiVersions v5, and those to
		// broker 0 named it (KIP-1242): none was turned away.
		require.Equal(t, []int16{5}, obs.versionsSeen(kmsg.ApiVersions, 0))
		for _, r := range obs.requests() {
			if r.key == kmsg.ApiVersions.Int16() {
				require.Equal(t, int16(0), r.code, "ApiVersions v%d answered %d", r.version, r.code)
			}
		}
	}()
	for v := int16(0); v <= 2; v++ {
		cl := pinnedClient(t, addr, kmsg.DescribeCluster, v)
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		req.IncludeFencedBrokers = true
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Equal(t, v, req.Version, "negotiated version")
		require.Equal(t, int16(0), resp.ErrorCode)
		require.Equal(t, "queen", resp.ClusterID) // QUEEN_KAFKA_CLUSTER's default, as Metadata answers it
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		require.NoError(t, err)
		require.Equal(t, *md.ClusterID, resp.ClusterID)
		require.Equal(t, md.ControllerID, resp.ControllerID)
		require.Len(t, resp.Brokers, 1)
		require.Equal(t, int32(0), resp.Brokers[0].NodeID)
		require.Equal(t, host, resp.Brokers[0].Host)
		require.Equal(t, port, resp.Brokers[0].Port)
		require.Equal(t, authz.Cluster, resp.ClusterAuthorizedOperations) // asked: every operation, as Kafka with no authorizer

		for _, c := range []struct {
			typ  int8
			code int16
		}{{2, kerr.MismatchedEndpointType.Code}, {7, kerr.UnsupportedEndpointType.Code}} {
			if v == 0 {
				continue // v0 cannot carry the type
			}
			req := kmsg.NewPtrDescribeClusterRequest()
			req.EndpointType = c.typ
			resp, err := req.RequestWith(ctx, cl)
			require.NoError(t, err)
			require.Equal(t, c.code, resp.ErrorCode, "v%d endpoint type %d", v, c.typ)
			require.Empty(t, resp.Brokers)
		}
	}
}

// TestKgoDeleteGroupsV3: kadm's DeleteGroups request at v3 (sent by
// newAdmin) reads the cause of a refusal, and deletes a group as at v2.
func TestKgoDeleteGroupsV3(t *testing.T) {
	e, addr, obs := servedEnv(t, dev.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e.createTopic("dg")
	for v := int16(2); v <= 3; v++ {
		adm := pinned(t, addr, kmsg.DeleteGroups, v)
		_, err := adm.CommitOffsets(ctx, "dg-group", offsetsFromRecords(kgo.Record{Topic: "dg", Partition: 0, Offset: 3}))
		require.NoError(t, err)
		mark := obs.mark()
		rs, err := adm.DeleteGroups(ctx, "dg-group", "dg-never")
		require.NoError(t, err)
		require.NoError(t, rs["dg-group"].Err)
		require.Empty(t, rs["dg-group"].ErrMessage)
		require.ErrorIs(t, rs["dg-never"].Err, kerr.GroupIDNotFound)
		if v >= 3 {
			require.Equal(t, kerr.GroupIDNotFound.Description, rs["dg-never"].ErrMessage)
		} else {
			require.Empty(t, rs["dg-never"].ErrMessage)
		}
		require.Equal(t, []int16{v}, obs.versionsSeen(kmsg.DeleteGroups, mark), "negotiated version")
	}
}
