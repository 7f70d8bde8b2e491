package transport

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConnectionKeepsNoLargeWriteBuffer: after a 512 KiB answer the
// connection holds a response buffer of at most keptWriteBuffer, so
// thousands of idle connections do not pin their last large answer's.
func TestConnectionKeepsNoLargeWriteBuffer(t *testing.T) {
	a, peer := net.Pipe()
	defer a.Close()
	defer peer.Close()
	go func() { _, _ = io.Copy(io.Discard, peer) }()
	c := NewServer(Config{}).NewConn(a)

	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic = "t"
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.RecordBatches = make([]byte, 512<<10)
	rt.Partitions = []kmsg.FetchResponseTopicPartition{rp}
	resp.Topics = []kmsg.FetchResponseTopic{rt}
	q := queued{hdr: requestHeader{key: kmsg.Fetch.Int16(), version: 12, correlationID: 1, flexible: true}}

	var buf []byte
	for range 3 {
		require.True(t, c.writeAnswer(q, resp, &buf))
		require.LessOrEqual(t, cap(buf), keptWriteBuffer, "the connection keeps a small buffer only")
	}
	small := kmsg.NewPtrHeartbeatResponse()
	small.Version = 4
	require.True(t, c.writeAnswer(queued{hdr: requestHeader{key: kmsg.Heartbeat.Int16(), version: 4, correlationID: 2, flexible: true}}, small, &buf))
	require.LessOrEqual(t, cap(buf), keptWriteBuffer)
}
