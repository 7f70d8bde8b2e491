package node

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// FuzzRequestBody runs every advertised request body through the node's
// own request path: the header built for (key, version), the gate of the
// version table and kmsg's decode, then the handler the table dispatches
// to (transport.Conn.Dispatch) against an in-process dev Queen. A
// handler panic, which dispatch turns into an error that closes one
// connection, fails the target; so does an admitted request outside the
// advertised window. Keys are taken modulo the table so the fuzzer spends
// its time on offered APIs.
func FuzzRequestBody(f *testing.F) {
	for _, s := range requestBodySeeds() {
		f.Add(s.row, s.version, s.body)
	}
	b := devbroker.Start(f, dev.Options{Logger: testLogger()}, nil)
	n := newNodeOn(f, b.URL, nil)
	f.Fuzz(func(t *testing.T, row uint8, version int16, body []byte) {
		r := apiRows[int(row)%len(apiRows)]
		a, peer := net.Pipe()
		defer a.Close()
		defer peer.Close()
		c := n.srv.NewConn(a)
		// A handler that waits (a long poll, a join) ends with the context.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Dispatch(ctx, append(requestHeader(r.Key, version), body...))
		if err != nil && strings.Contains(err.Error(), "handler panic") {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.Key), version, err)
		}
		if err == nil && (version < r.Min || version > r.Max) && r.Key != kmsg.ApiVersions.Int16() {
			t.Fatalf("admitted %s v%d outside v%d-v%d", kmsg.NameForKey(r.Key), version, r.Min, r.Max)
		}
	})
}

type bodySeed struct {
	row     uint8
	version int16
	body    []byte
}

// requestBodySeeds is every row at its lowest and highest version with a
// default body, plus a few bodies that name a topic.
func requestBodySeeds() []bodySeed {
	var out []bodySeed
	for i, r := range apiRows {
		for _, v := range []int16{r.Min, r.Max} {
			req := kmsg.RequestForKey(r.Key)
			req.SetVersion(v)
			out = append(out, bodySeed{uint8(i), v, req.AppendTo(nil)})
		}
	}
	rowOf := func(key int16) uint8 {
		for i, r := range apiRows {
			if r.Key == key {
				return uint8(i)
			}
		}
		panic("no row")
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 9
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("orders")}}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 5
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "orders", 2, 1
	create.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 6
	commit.Group = "g"
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3}}}}
	// Fetch sessions: a full fetch opening one, an incremental one with a
	// forgotten partition, and one by topic id.
	var fetches []bodySeed
	for _, v := range []int16{12, 13} {
		for _, epoch := range []int32{0, 1} {
			fr := kmsg.NewPtrFetchRequest()
			fr.Version, fr.SessionID, fr.SessionEpoch = v, epoch*7, epoch
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "orders", [16]byte{1}
			ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
			fr.Topics = []kmsg.FetchRequestTopic{ft}
			fg := kmsg.NewFetchRequestForgottenTopic()
			fg.Topic, fg.TopicID, fg.Partitions = "orders", [16]byte{1}, []int32{1}
			fr.ForgottenTopics = []kmsg.FetchRequestForgottenTopic{fg}
			fetches = append(fetches, bodySeed{rowOf(fr.Key()), v, fr.AppendTo(nil)})
		}
	}
	return append(append(out, fetches...),
		bodySeed{rowOf(meta.Key()), 9, meta.AppendTo(nil)},
		bodySeed{rowOf(create.Key()), 5, create.AppendTo(nil)},
		bodySeed{rowOf(commit.Key()), 6, commit.AppendTo(nil)},
	)
}

// requestHeader is the request header of key at version (client id
// "fuzz", correlation id 1), as kmsg frames it: the frame of an empty
// request less its size prefix and body. A negative version is framed as
// version 0 with its version field rewritten.
func requestHeader(key, version int16) []byte {
	req := kmsg.RequestForKey(key)
	req.SetVersion(max(version, 0))
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, req, 1)
	hdr := frame[4 : len(frame)-len(req.AppendTo(nil))]
	hdr[2], hdr[3] = byte(uint16(version)>>8), byte(uint16(version))
	return hdr
}
