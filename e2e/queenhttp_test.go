package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// Plain HTTP against queen-dev, written from the contract
// (queen-api.md) rather than through package queen, so that a bug
// shared by the facade's client and these tests cannot hide itself.

var httpc = &http.Client{Timeout: 15 * time.Second}

func (d *queenDev) post(t testing.TB, path string, body any, out any) int {
	t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		t.Fatalf("marshal %s body: %v", path, err)
	}
	req, err := http.NewRequest(http.MethodPost, d.url+path, bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	d.authorize(req)
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: decode %q: %v", path, b, err)
		}
	}
	if resp.StatusCode/100 != 2 {
		t.Logf("POST %s → %d %s", path, resp.StatusCode, b)
	}
	return resp.StatusCode
}

type pushItem struct {
	Queue     string          `json:"queue"`
	Partition string          `json:"partition,omitempty"`
	Payload   json.RawMessage `json:"payload"`
}

type pushResult struct {
	Index  int    `json:"index"`
	Status string `json:"status"`
	Offset *int64 `json:"offset"`
}

// push stores native Queen messages and returns their offsets.
func (d *queenDev) push(t testing.TB, items ...pushItem) []int64 {
	t.Helper()
	var res []pushResult
	if code := d.post(t, "/api/v1/push", map[string]any{"items": items}, &res); code != http.StatusCreated {
		t.Fatalf("push: status %d, want 201", code)
	}
	if len(res) != len(items) {
		t.Fatalf("push: %d results for %d items", len(res), len(items))
	}
	offs := make([]int64, len(items))
	for _, r := range res {
		if r.Status != "queued" || r.Offset == nil {
			t.Fatalf("push item %d: status %q offset %v", r.Index, r.Status, r.Offset)
		}
		offs[r.Index] = *r.Offset
	}
	return offs
}

type fetchEntry struct {
	Queue     string `json:"queue"`
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
}

type fetchRecord struct {
	Offset        int64           `json:"offset"`
	TransactionID string          `json:"transactionId"`
	Payload       json.RawMessage `json:"payload"`
	TS            string          `json:"ts"`
}

type fetchResult struct {
	Queue          string        `json:"queue"`
	Partition      string        `json:"partition"`
	Records        []fetchRecord `json:"records"`
	HighWatermark  int64         `json:"highWatermark"`
	LogStartOffset int64         `json:"logStartOffset"`
	Error          string        `json:"error"`
}

// fetch reads one partition through the fetch route from offset.
func (d *queenDev) fetch(t testing.TB, queue, partition string, offset int64) fetchResult {
	t.Helper()
	var res struct {
		Entries []fetchResult `json:"entries"`
	}
	body := map[string]any{"entries": []fetchEntry{{queue, partition, offset}}, "maxWaitMs": 0}
	if code := d.post(t, "/api/v1/fetch", body, &res); code != http.StatusOK {
		t.Fatalf("fetch: status %d, want 200", code)
	}
	if len(res.Entries) != 1 {
		t.Fatalf("fetch: %d entries, want 1", len(res.Entries))
	}
	return res.Entries[0]
}

// storedEnvelope is the payload the facade writes for one Kafka record (contract
// §11). Pointers keep JSON null apart from an absent or empty field.
type storedEnvelope struct {
	K *string       `json:"k"`
	V *string       `json:"v"`
	H []envelopeHdr `json:"h"`
	T *int64        `json:"t"`
}

type envelopeHdr struct {
	K string  `json:"k"`
	V *string `json:"v"`
}

// decodeEnvelope parses a stored payload strictly: exactly the envelope's
// keys, k and v always present.
func decodeEnvelope(t testing.TB, raw json.RawMessage) storedEnvelope {
	t.Helper()
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("payload %s is not an object: %v", raw, err)
	}
	for k := range keys {
		switch k {
		case "k", "v", "h", "t":
		default:
			t.Fatalf("payload %s has key %q outside the envelope", raw, k)
		}
	}
	if _, ok := keys["k"]; !ok {
		t.Fatalf("payload %s has no k", raw)
	}
	if _, ok := keys["v"]; !ok {
		t.Fatalf("payload %s has no v", raw)
	}
	var e storedEnvelope
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("payload %s: %v", raw, err)
	}
	return e
}

func b64(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func strp(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// authorize gives req the broker's admin bearer, when it runs with auth on.
func (d *queenDev) authorize(req *http.Request) {
	if d.admin != "" {
		req.Header.Set("Authorization", "Bearer "+d.admin)
	}
}

// fault posts one fault-injection rule to queen-dev (QUEEN_DEV_FAULTS=true).
func (d *queenDev) fault(t testing.TB, rule any) {
	t.Helper()
	if code := d.post(t, "/dev/faults", rule, nil); code/100 != 2 {
		t.Fatalf("POST /dev/faults: status %d", code)
	}
}

// clearFaults removes every fault-injection rule. A failure is the test's:
// the assertions after it expect the faults gone.
func (d *queenDev) clearFaults(t testing.TB) {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, d.url+"/dev/faults", nil)
	if err != nil {
		t.Errorf("DELETE /dev/faults: %v", err)
		return
	}
	d.authorize(req)
	resp, err := httpc.Do(req)
	if err != nil {
		t.Errorf("DELETE /dev/faults: %v", err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Errorf("DELETE /dev/faults: status %d", resp.StatusCode)
	}
}

// faults lists the fault-injection rules in force, with their hits.
func (d *queenDev) faults(t testing.TB) []faultRule {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, d.url+"/dev/faults", nil)
	if err != nil {
		t.Fatalf("GET /dev/faults: %v", err)
	}
	d.authorize(req)
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatalf("GET /dev/faults: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /dev/faults: status %d", resp.StatusCode)
	}
	var body struct {
		Rules []faultRule `json:"rules"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /dev/faults: %v", err)
	}
	return body.Rules
}

// kvAs is one KV call (queen-api §7) presenting token, for a test that
// needs a call of its own to meet a token-scoped fault: it returns when
// queen-dev answers, with the status.
func (d *queenDev) kvAs(token string, ops ...map[string]any) (int, error) {
	raw, err := json.Marshal(map[string]any{"ops": ops})
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, d.url+"/api/v1/kv", bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
