package node

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/queen-mq/queen-kafka/queen"
)

// fakeQueen is the slice of Queen's HTTP API the topic handlers call
// (queue list, configure, delete, KV), in memory, with fault injection.
type fakeQueen struct {
	mu      sync.Mutex
	queues  map[string]*fakeQueue
	kv      map[string]fakeRow
	version int64
	nextID  int
	calls   map[string]int
	// fault, when set, may answer a request itself with a status.
	fault func(r *http.Request) (status int, retryAfter string, body string)
}

type fakeQueue struct {
	id         string
	partitions int
	options    map[string]any
}

type fakeRow struct {
	value   json.RawMessage
	version int64
}

func newFakeQueen(t *testing.T) (*fakeQueen, string) {
	f := &fakeQueen{queues: map[string]*fakeQueue{}, kv: map[string]fakeRow{}, calls: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeQueen) count(route string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[route]
}

func (f *fakeQueen) addQueue(name string, partitions int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	id := fmt.Sprintf("q-%d", f.nextID)
	f.queues[name] = &fakeQueue{id: id, partitions: partitions, options: map[string]any{}}
	return id
}

func (f *fakeQueen) queue(name string) *fakeQueue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queues[name]
}

func (f *fakeQueen) row(key string) (json.RawMessage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.kv[key]
	return r.value, ok
}

func (f *fakeQueen) putRow(key string, v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
	f.kv[key] = fakeRow{value: b, version: f.version}
}

func (f *fakeQueen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	if strings.HasPrefix(r.URL.Path, "/api/v1/resources/queues/") {
		route = r.Method + " /api/v1/resources/queues/:queue"
	}
	f.mu.Lock()
	f.calls[route]++
	fault := f.fault
	f.mu.Unlock()
	if fault != nil {
		if status, ra, body := fault(r); status != 0 {
			if ra != "" {
				w.Header().Set("Retry-After", ra)
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch route {
	case "GET /api/v1/resources/queues":
		var out queen.QueueList
		out.Queues = []queen.QueueInfo{}
		for name, q := range f.queues {
			out.Queues = append(out.Queues, queen.QueueInfo{Name: name, ID: q.id, Partitions: q.partitions})
		}
		writeJSON(w, out)
	case "POST /api/v1/configure":
		var body map[string]any
		if json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, `{"error":"bad body"}`, 400)
			return
		}
		name, _ := body["queue"].(string)
		delete(body, "queue")
		q := f.queues[name]
		if q == nil {
			f.nextID++
			q = &fakeQueue{id: fmt.Sprintf("q-%d", f.nextID), options: map[string]any{}}
			f.queues[name] = q
		}
		for k, v := range body {
			q.options[k] = v
		}
		writeJSON(w, map[string]any{"configured": true, "queue": name, "namespace": "", "task": "", "options": q.options})
	case "DELETE /api/v1/resources/queues/:queue":
		name, _ := url.PathUnescape(strings.TrimPrefix(r.URL.Path, "/api/v1/resources/queues/"))
		_, existed := f.queues[name]
		delete(f.queues, name)
		writeJSON(w, map[string]any{"deleted": existed, "existed": existed})
	case "POST /api/v1/kv":
		var req queen.KVRequest
		if json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, `{"error":"kv_bad_request"}`, 400)
			return
		}
		writeJSON(w, map[string]any{"results": f.applyKV(req.Operations)})
	default:
		http.Error(w, `{"error":"not found"}`, 404)
	}
}

func (f *fakeQueen) applyKV(ops []queen.KVOp) []queen.KVResult {
	out := make([]queen.KVResult, len(ops))
	for i, op := range ops {
		res := queen.KVResult{Index: i, Op: op.Op, Key: op.Key}
		cur, live := f.kv[op.Key]
		switch op.Op {
		case queen.OpPut:
			if op.Expect != nil && ((*op.Expect == 0 && live) || (*op.Expect != 0 && cur.version != *op.Expect)) {
				res.Reason, res.Value, res.Version = queen.ReasonVersion, cur.value, cur.version
				break
			}
			f.version++
			f.kv[op.Key] = fakeRow{value: op.Value, version: f.version}
			res.Applied, res.Value, res.Version = true, op.Value, f.version
		case queen.OpDelete:
			if !live {
				res.Reason = queen.ReasonAbsent
				break
			}
			delete(f.kv, op.Key)
			res.Applied, res.Value, res.Version = true, cur.value, cur.version
		case queen.OpGetMany:
			for _, k := range op.Keys {
				if r, ok := f.kv[k]; ok {
					res.Rows = append(res.Rows, queen.KVRow{Key: k, Value: r.value, Version: r.version})
				} else {
					res.Missing = append(res.Missing, k)
				}
			}
		case queen.OpGetPrefix:
			var keys []string
			for k := range f.kv {
				if strings.HasPrefix(k, op.Prefix) && k > op.After {
					keys = append(keys, k)
				}
			}
			sort.Strings(keys)
			limit := op.Limit
			if limit <= 0 {
				limit = 100
			}
			if len(keys) > limit {
				keys = keys[:limit]
				res.Truncated = true
				last := keys[len(keys)-1]
				res.NextAfter = &last
			}
			for _, k := range keys {
				res.Rows = append(res.Rows, queen.KVRow{Key: k, Value: f.kv[k].value, Version: f.kv[k].version})
			}
		}
		out[i] = res
	}
	return out
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
