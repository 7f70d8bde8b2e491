package node

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/internal/testsupport/devbroker"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/queen/dev"
)

// devQueen is the in-process development broker behind an httptest server,
// with a recorder that counts calls per route, keeps request bodies, and
// may answer a request itself (a synthetic fault or a gate).
type devQueen struct {
	t   *testing.T
	b   *dev.Broker
	url string
	q   *queen.Client
	rec *devbroker.Recorder
}

func newDevQueen(t *testing.T) (*devQueen, string) {
	t.Helper()
	return newDevQueenTokens(t, nil)
}

// newDevQueenTokens is newDevQueen with auth on when tokens is not empty
// (bearer token → tenant and role).
func newDevQueenTokens(t *testing.T, tokens map[string]dev.Token) (*devQueen, string) {
	t.Helper()
	d := &devQueen{t: t, rec: devbroker.NewRecorder()}
	b := devbroker.Start(t, dev.Options{Faults: true, Logger: testLogger(), Tokens: tokens}, d.rec.Wrap)
	d.b, d.url, d.q = b.Broker, b.URL, b.Client
	return d, b.URL
}

func (d *devQueen) count(route string) int { return d.rec.Count(route) }

func (d *devQueen) lastBody(route string) map[string]any {
	b := d.rec.Bodies(route)
	if len(b) == 0 {
		return nil
	}
	return b[len(b)-1]
}

func (d *devQueen) setFault(f func(r *http.Request) (int, string, string)) { d.rec.SetFault(f) }

// addQueue creates a queue natively with partitions 0..partitions-1
// materialised by one pushed message each, and returns its id.
func (d *devQueen) addQueue(name string, partitions int) string {
	d.t.Helper()
	return devbroker.AddQueue(d.t, d.q, name, partitions)
}

// queue is the listing's entry for name, nil when absent.
func (d *devQueen) queue(name string) *queen.QueueInfo {
	d.t.Helper()
	return devbroker.Queue(d.t, d.q, name)
}

func (d *devQueen) putRow(key string, v any) {
	d.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		d.t.Fatal(err)
	}
	if _, err := d.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpPut, NS: queen.Namespace, Key: key, Value: b, Forever: true}}); err != nil {
		d.t.Fatalf("put %s: %v", key, err)
	}
}

func (d *devQueen) delRow(key string) {
	d.t.Helper()
	if _, err := d.q.KV(context.Background(), []queen.KVOp{{Op: queen.OpDelete, NS: queen.Namespace, Key: key}}); err != nil {
		d.t.Fatalf("delete %s: %v", key, err)
	}
}

// record reads a qk:topiccfg: record, nil when absent.
func (d *devQueen) record(topic string) *catalogue.Record {
	d.t.Helper()
	rec, _, err := catalogue.ReadRecord(context.Background(), d.q, topic)
	if err != nil {
		d.t.Fatalf("read record %s: %v", topic, err)
	}
	return rec
}

// injectFault replaces the dev broker's fault rules through its own API.
func (d *devQueen) injectFault(rules ...dev.FaultRule) {
	d.t.Helper()
	b, _ := json.Marshal(map[string]any{"rules": rules})
	resp, err := http.Post(d.url+"/dev/faults", "application/json", bytes.NewReader(b))
	if err != nil {
		d.t.Fatalf("inject fault: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		d.t.Fatalf("inject fault: HTTP %d", resp.StatusCode)
	}
}
