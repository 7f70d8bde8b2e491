package node

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/transport"
)

// call dispatches req through its version-table row, as a connection does.
func call[T kmsg.Response](t *testing.T, n *Node, c *transport.Conn, req kmsg.Request) T {
	t.Helper()
	row, ok := transport.NewTable(n.apiTable()).Row(req.Key())
	if !ok {
		t.Fatalf("%s is not in the version table", kmsg.NameForKey(req.Key()))
	}
	if v := req.GetVersion(); v < row.Min || v > row.Max {
		t.Fatalf("%s v%d outside the advertised window", kmsg.NameForKey(req.Key()), v)
	}
	resp, err := runRow(t.Context(), row, c, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp.(T)
}

func strp(s string) *string { return &s }

type createSpec struct {
	name       string
	partitions int32
	rf         int16
	configs    map[string]string
}

func createTopics(t *testing.T, n *Node, c *transport.Conn, version int16, validateOnly bool, specs ...createSpec) *kmsg.CreateTopicsResponse {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = version
	req.ValidateOnly = validateOnly
	for _, s := range specs {
		tp := kmsg.NewCreateTopicsRequestTopic()
		tp.Topic, tp.NumPartitions, tp.ReplicationFactor = s.name, s.partitions, s.rf
		for k, v := range s.configs {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, strp(v)
			tp.Configs = append(tp.Configs, cfg)
		}
		req.Topics = append(req.Topics, tp)
	}
	return call[*kmsg.CreateTopicsResponse](t, n, c, req)
}

func describeTopicConfigs(t *testing.T, n *Node, c *transport.Conn, topic string, names ...string) kmsg.DescribeConfigsResponseResource {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeTopic, topic, names
	req.Resources = append(req.Resources, r)
	return call[*kmsg.DescribeConfigsResponse](t, n, c, req).Resources[0]
}

func configValues(rr kmsg.DescribeConfigsResponseResource) map[string]string {
	out := map[string]string{}
	for _, c := range rr.Configs {
		out[c.Name] = *c.Value
	}
	return out
}
