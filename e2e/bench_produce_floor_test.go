package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/producer"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// The produce floor is the fourth side of BenchmarkProduceTargets: what the
// produce path's format costs when nothing else is done, measured in the
// same units as target (a), so that the facade's CPU per record can be read
// as a multiple of the cost of the bytes.
//
// It is this test binary run again with produceFloorEnv set, a process of
// its own whose /proc user+system time is read exactly as the facade's is.
// The same franz-go producer (produceWindow) drives it over loopback TCP.
// Per connection, one request at a time, it does:
//
//   - read each frame (size prefix, then the body into one reused buffer)
//     and parse the request header and body with kmsg, as the facade does;
//   - Produce: per partition recordbatch.ParseProduce (the v2 batch header
//     and its CRC-32C) and recordbatch.Decoder.Envelopes (kmsg's record
//     parse and envelope.Append's base64 JSON envelope: the facade's
//     own code, with its decode-budget bookkeeping, paid per 256 KiB), each
//     record's dedup key (producer.DedupKeys, part of the push body's
//     format), the whole request's records as one queen.PushBatch sent by
//     queen.Client.PushBatch (HTTP/1.1 keep-alive, the body written by
//     writev from the envelopes' memory, the push answer read and decoded
//     by the facade's decoder), and the Produce answer (each partition's
//     first offset from the push answer) in one Write;
//   - ApiVersions, Metadata (6 partitions of any topic asked for, all led by
//     itself) and InitProducerID answered from constants and a counter.
//
// It does not: check sequence numbers or producer epochs, deduplicate, keep
// any catalogue of topics, coalesce requests or split a push into shards,
// run more than one push per connection at a time, bound memory or
// connections, authenticate, count metrics or log per request. The sink it
// pushes to (produceSink) runs in the benchmark's process, as queen-dev
// runs outside the facade's: its CPU is in neither figure.
const produceFloorEnv = "QK_E2E_PRODUCE_FLOOR"

// produceFloorPipelinedEnv, set to 1 beside produceFloorEnv, has the floor
// serve each connection pipelined (servePipelined): a Produce is pushed as
// soon as it is read, while those before it on its connection are still
// on their way, and the answers are written in order. It is the fastest
// any facade could acknowledge, ordering aside: BenchmarkLatencyTargets
// runs it beside the one-at-a-time floor.
const produceFloorPipelinedEnv = "QK_E2E_PRODUCE_FLOOR_PIPELINED"

func init() {
	if url := os.Getenv(produceFloorEnv); url != "" {
		os.Exit(runProduceFloor(url))
	}
}

// floorPartitions is how many partitions the floor's Metadata gives every
// topic: the workload's.
const floorPartitions = targetPartitions

// floorDecoding is the floor's decoder pool, with the facade's frame ceiling
// and item overhead (node's decoding pool).
var floorDecoding = recordbatch.NewPool(recordbatch.Limits{Frame: 100 << 20, ItemOverhead: 64})

// runProduceFloor serves the floor on a loopback port it prints as
// "FLOOR LISTENING <addr>", pushing to the sink at sinkURL, until killed.
func runProduceFloor(sinkURL string) int {
	q, err := queen.New(queen.Config{URL: sinkURL})
	if err != nil {
		fmt.Println("FATAL queen client:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("FATAL listen:", err)
		return 1
	}
	addr := ln.Addr().(*net.TCPAddr)
	f := &floor{q: q, host: addr.IP.String(), port: int32(addr.Port)}
	serve := f.serve
	if os.Getenv(produceFloorPipelinedEnv) == "1" {
		serve = f.servePipelined
	}
	fmt.Println("FLOOR LISTENING", addr.String())
	return acceptLoop(ln, serve)
}

// acceptLoop serves each connection ln accepts with serve, on its own
// goroutine, printing any error but EOF, until Accept fails.
func acceptLoop(ln net.Listener, serve func(net.Conn) error) int {
	for {
		c, err := ln.Accept()
		if err != nil {
			fmt.Println("FATAL accept:", err)
			return 1
		}
		go func() {
			if err := serve(c); err != nil && !errors.Is(err, io.EOF) {
				fmt.Println("connection:", err)
			}
		}()
	}
}

type floor struct {
	q    *queen.Client
	host string
	port int32
	pids atomic.Int64
}

// serve answers one connection's requests in order, one at a time.
func (f *floor) serve(c net.Conn) error {
	defer c.Close()
	var frame, out []byte
	for {
		req, corr, err := readFloorRequest(c, &frame)
		if err != nil {
			return err
		}
		resp, err := f.answer(req)
		if err != nil {
			return err
		}
		if out, err = writeFloorAnswer(c, out, req, corr, resp); err != nil {
			return err
		}
	}
}

// floorAnswer is one pipelined request's answer, once it is made.
type floorAnswer struct {
	req  kmsg.Request
	corr uint32
	resp chan kmsg.Response
	err  chan error
}

// servePipelined answers one connection's requests in order, making each
// answer (a Produce's push) as soon as its request is read, while those
// before it are still being made: the pushes of one connection overlap,
// and no request waits for the one before it to be pushed.
func (f *floor) servePipelined(c net.Conn) error {
	defer c.Close()
	queue := make(chan floorAnswer, 16)
	readErr := make(chan error, 1)
	go func() {
		defer close(queue)
		for {
			var frame []byte // each its own: a Produce's records alias it
			req, corr, err := readFloorRequest(c, &frame)
			if err != nil {
				readErr <- err
				return
			}
			a := floorAnswer{req: req, corr: corr, resp: make(chan kmsg.Response, 1), err: make(chan error, 1)}
			go func() {
				resp, err := f.answer(req)
				a.resp <- resp
				a.err <- err
			}()
			queue <- a
		}
	}()
	var out []byte
	for a := range queue {
		resp, err := <-a.resp, <-a.err
		if err == nil {
			out, err = writeFloorAnswer(c, out, a.req, a.corr, resp)
		}
		if err != nil {
			c.Close() // ends the reader
			for range queue {
			}
			return err
		}
	}
	return <-readErr
}

// readFloorRequest reads one frame into *frame (grown as needed) and
// parses its request header and body with kmsg.
func readFloorRequest(c net.Conn, frame *[]byte) (kmsg.Request, uint32, error) {
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		return nil, 0, err
	}
	n := int(binary.BigEndian.Uint32(size[:]))
	if n < 10 || n > 100<<20 {
		return nil, 0, fmt.Errorf("frame of %d bytes", n)
	}
	if cap(*frame) < n {
		*frame = make([]byte, n)
	}
	fr := (*frame)[:n]
	if _, err := io.ReadFull(c, fr); err != nil {
		return nil, 0, fmt.Errorf("frame body: %w", err)
	}
	key := int16(binary.BigEndian.Uint16(fr[0:]))
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, 0, fmt.Errorf("api key %d", key)
	}
	req.SetVersion(int16(binary.BigEndian.Uint16(fr[2:])))
	corr := binary.BigEndian.Uint32(fr[4:])
	body := fr[10:]
	if cl := int(int16(binary.BigEndian.Uint16(fr[8:]))); cl > 0 {
		if cl > len(body) {
			return nil, 0, fmt.Errorf("client id of %d bytes", cl)
		}
		body = body[cl:]
	}
	if req.IsFlexible() {
		// The request header's tagged fields: franz-go sends none.
		if len(body) == 0 || body[0] != 0 {
			return nil, 0, errors.New("request header tagged fields")
		}
		body = body[1:]
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, 0, fmt.Errorf("%s body: %w", kmsg.NameForKey(key), err)
	}
	return req, corr, nil
}

// writeFloorAnswer writes resp (nil: acks=0, nothing) as req's answer in
// one Write, framed in out, which it returns for reuse.
func writeFloorAnswer(c net.Conn, out []byte, req kmsg.Request, corr uint32, resp kmsg.Response) ([]byte, error) {
	if resp == nil {
		return out, nil
	}
	out = append(out[:0], 0, 0, 0, 0)
	out = binary.BigEndian.AppendUint32(out, corr)
	if req.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	if _, err := c.Write(out); err != nil {
		return out, fmt.Errorf("answer: %w", err)
	}
	return out, nil
}

func (f *floor) answer(req kmsg.Request) (kmsg.Response, error) {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range []struct{ key, min, max int16 }{
			{kmsg.Produce.Int16(), 3, 11}, // v12+ needs transaction.version, v13 topic ids
			{kmsg.Metadata.Int16(), 0, 12},
			{kmsg.ApiVersions.Int16(), 0, 3},
			{kmsg.InitProducerID.Int16(), 0, 4},
		} {
			resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k.key, MinVersion: k.min, MaxVersion: k.max})
		}
		if r.Version > 3 {
			resp.SetVersion(0)
			resp.ErrorCode = kerr.UnsupportedVersion.Code
		}
		return resp, nil
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: f.host, Port: f.port}}
		resp.ClusterID = kmsg.StringPtr("floor")
		for _, t := range r.Topics {
			if t.Topic == nil {
				continue
			}
			rt := kmsg.NewMetadataResponseTopic()
			rt.Topic = t.Topic
			for p := range int32(floorPartitions) {
				rp := kmsg.NewMetadataResponseTopicPartition()
				rp.Partition, rp.Leader, rp.Replicas, rp.ISR = p, 0, []int32{0}, []int32{0}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = f.pids.Add(1), 0
		return resp, nil
	case *kmsg.ProduceRequest:
		resp := f.produce(r)
		if r.Acks == 0 {
			return nil, nil
		}
		return resp, nil
	}
	return nil, fmt.Errorf("%s is not served by the floor", kmsg.NameForKey(req.Key()))
}

// floorPart is one partition of a Produce on its way: its answer, and its
// items' range in the push (to < 0: refused before the push).
type floorPart struct {
	topic    string
	resp     *kmsg.ProduceResponseTopicPartition
	from, to int // its envelopes' entries in ends
	env      []byte
	keys     []string
}

// produce decodes every partition's batch into envelopes, pushes them all
// in one push and answers each partition with its first offset.
func (f *floor) produce(r *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	dec := floorDecoding.Get()
	defer dec.Release()
	dec.StartRequest()
	var (
		chunk []byte
		size  int
		ends  []int
		parts []floorPart
		rb    kmsg.RecordBatch
	)
	for _, t := range r.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for ti, t := range r.Topics {
		for pi, p := range t.Partitions {
			rp := &resp.Topics[ti].Partitions[pi]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			fp := floorPart{topic: t.Topic, resp: rp, from: len(ends), to: -1}
			fault := recordbatch.ParseProduce(p.Records, &rb)
			if fault == nil {
				// Each batch's envelopes go on in the decoder's last array
				// while they fit (an empty slice of its spare room), so
				// none is copied to grow a shared buffer; ends are
				// offsets into the batch's own envelopes.
				room := chunk[len(chunk):]
				fp.env, ends, fault = dec.Envelopes(&rb, t.Topic, room, ends)
				if fault == nil && cap(fp.env) == cap(room) {
					chunk = chunk[:len(chunk)+len(fp.env)]
				} else if fault == nil {
					chunk = fp.env
				}
			}
			if fault != nil {
				rp.ErrorCode = fault.Code
				parts = append(parts, fp)
				continue
			}
			size += len(fp.env)
			fp.to = len(ends)
			fp.keys = producer.DedupKeys(rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence, fp.to-fp.from)
			parts = append(parts, fp)
		}
	}
	push := queen.NewPushBatch(size + len(ends)*(64+len(dedupKeyLen)))
	for _, fp := range parts {
		part := strconv.Itoa(int(fp.resp.Partition))
		start := 0
		for i := fp.from; i < fp.to; i++ {
			push.Add(fp.topic, part, fp.env[start:ends[i]], fp.keys[i-fp.from])
			start = ends[i]
		}
	}
	results, err := f.q.PushBatch(context.Background(), push)
	for _, fp := range parts {
		switch {
		case fp.to < 0:
		case err != nil:
			fp.resp.ErrorCode = kerr.UnknownServerError.Code
		case fp.to > fp.from:
			fp.resp.BaseOffset = *results[fp.from].Offset
		}
	}
	if err != nil {
		fmt.Println("floor push:", err)
	}
	return resp
}

// dedupKeyLen sizes a dedup key for the push body's estimate.
const dedupKeyLen = `kafka:1234567890:12:1234567890`

// startProduceFloor runs the floor as a child process pushing to sinkURL,
// pipelined (produceFloorPipelinedEnv) or not, and returns it and its
// Kafka address.
func startProduceFloor(b *testing.B, sinkURL string, pipelined bool) (*testsupport.Proc, string) {
	env := map[string]string{produceFloorEnv: sinkURL}
	if pipelined {
		env[produceFloorPipelinedEnv] = "1"
	}
	return startChild(b, "produce-floor", env, "FLOOR LISTENING ")
}

// startChild runs this test binary again with env (one of its init
// hooks' variables), killed when b ends, and returns it and what follows
// ready on the first line of its output that starts with ready.
func startChild(b *testing.B, name string, env map[string]string, ready string) (*testsupport.Proc, string) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	p := &testsupport.Proc{Name: name, Bin: exe, Env: testsupport.EnvList(env), Out: &testsupport.LogBuffer{}}
	p.AttachLogs(b)
	b.Cleanup(p.Kill)
	if err := p.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := p.WaitLine(func(l string) bool { return strings.HasPrefix(l, ready) }, 30*time.Second)
	if err != nil {
		b.Fatalf("%s did not listen: %v", name, err)
	}
	return p, strings.TrimPrefix(line, ready)
}

// produceSink is the floor's Queen: POST /api/v1/push read whole, answered
// 201 with one canonical result per item (the shape queen-dev renders, each
// echoing its item's transactionId and queue) and offsets from one counter.
// Nothing is stored. It runs in the benchmark's process.
type produceSink struct {
	url   string
	items atomic.Int64
	next  atomic.Int64
	bufs  sync.Pool
	logMu sync.Mutex
	log   *os.File // nil: nothing stored
}

func startProduceSink(b *testing.B) *produceSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s, srv := serveProduceSink(ln, nil)
	b.Cleanup(func() { _ = srv.Close() })
	return s
}

// serveProduceSink serves a produceSink on ln; with log set, every push
// body is appended to it.
func serveProduceSink(ln net.Listener, log *os.File) (*produceSink, *http.Server) {
	s := &produceSink{url: "http://" + ln.Addr().String(), log: log}
	s.bufs.New = func() any { return new(sinkBufs) }
	srv := &http.Server{Handler: http.HandlerFunc(s.push), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return s, srv
}

// fileSinkEnv runs this test binary as the file sink: a produceSink of its
// own process that also appends every push body to a file in the directory
// the variable names (one write(2) per body, under a lock, the file never
// fsynced, as queen-dev acknowledges once its log record is written). It
// is queen-dev's floor: reading the same HTTP bodies, answering them, and
// putting their bytes in a file once, with no engine, index, checksum or
// second copy, so that queen-dev's CPU per record can be read as a
// multiple of what the bytes cost.
const fileSinkEnv = "QK_E2E_FILE_SINK"

func init() {
	if dir := os.Getenv(fileSinkEnv); dir != "" {
		os.Exit(runFileSink(dir))
	}
}

func runFileSink(dir string) int {
	f, err := os.OpenFile(filepath.Join(dir, "pushes.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Println("FATAL open:", err)
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println("FATAL listen:", err)
		return 1
	}
	s, _ := serveProduceSink(ln, f)
	fmt.Println("SINK LISTENING", s.url)
	select {}
}

// startFileSink starts the file sink (fileSinkEnv) and returns it and its URL.
func startFileSink(b *testing.B) (*testsupport.Proc, string) {
	return startChild(b, "file-sink", map[string]string{fileSinkEnv: b.TempDir()}, "SINK LISTENING ")
}

var (
	sinkItem = []byte(`{"queue":`)
	sinkTxID = []byte(`,"transactionId":"`)
)

// push answers one push. The item boundaries are found by their literal
// heads: the envelopes hold only base64 and fixed keys, never either.
func (s *produceSink) push(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/v1/push" {
		http.Error(w, "not the push route", http.StatusNotFound)
		return
	}
	sb := s.bufs.Get().(*sinkBufs)
	defer s.bufs.Put(sb)
	sb.body.Reset()
	if _, err := sb.body.ReadFrom(r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := sb.body.Bytes()
	if s.log != nil {
		s.logMu.Lock()
		_, err := s.log.Write(body)
		s.logMu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	heads := sb.heads[:0]
	for at := 0; ; {
		i := bytes.Index(body[at:], sinkItem)
		if i < 0 {
			break
		}
		heads = append(heads, at+i)
		at += i + len(sinkItem)
	}
	base := s.next.Add(int64(len(heads))) - int64(len(heads))
	s.items.Add(int64(len(heads)))
	o := append(sb.answer[:0], '[')
	for i, h := range heads {
		end := len(body)
		if i+1 < len(heads) {
			end = heads[i+1]
		}
		item := body[h:end]
		queue := item[len(sinkItem)+1:]
		queue = queue[:bytes.IndexByte(queue, '"')]
		var txID []byte
		if t := bytes.Index(item, sinkTxID); t >= 0 {
			txID = item[t+len(sinkTxID):]
			txID = txID[:bytes.IndexByte(txID, '"')]
		}
		if i > 0 {
			o = append(o, ',')
		}
		o = append(o, `{"index":`...)
		o = strconv.AppendInt(o, int64(i), 10)
		o = append(o, `,"message_id":"00000000-0000-7000-8000-000000000000","transaction_id":"`...)
		o = append(o, txID...)
		o = append(o, `","queueName":"`...)
		o = append(o, queue...)
		o = append(o, `","status":"queued","offset":`...)
		o = strconv.AppendInt(o, base+int64(i), 10)
		o = append(o, '}')
	}
	o = append(o, ']')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(o)))
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(o)
	sb.heads, sb.answer = heads, o
}

// sinkBufs are one push's reused buffers.
type sinkBufs struct {
	body   bytes.Buffer
	heads  []int
	answer []byte
}
