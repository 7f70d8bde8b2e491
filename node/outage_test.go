package node

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/sethvargo/go-envconfig"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/queen-mq/queen-kafka/catalogue"
	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/recordbatch/batchtest"
)

// During a Queen outage a producer's Metadata and Produce requests cost
// Queen a few queue listings, not one each, and log a bounded number of
// warnings, not one per request (issue 20 item 13: one producer caused
// about 60 listings a second and 1,658 WARN lines in 37 s). Both with no
// listing ever loaded (each request is answered the mapped fault) and with
// a stale one (it answers).
func TestQueenOutageListingsAndWarningsBounded(t *testing.T) {
	dq, url := newDevQueen(t)
	dq.addQueue("orders", 1)
	cfg, err := config.LoadFacade(context.Background(), envconfig.MapLookuper(testEnv(url)))
	if err != nil {
		t.Fatal(err)
	}
	var out testsupport.LogBuffer
	n, err := New(cfg, slog.New(slog.NewTextHandler(&out, nil)))
	if err != nil {
		t.Fatal(err)
	}
	clk := withClock(n)
	c := testConn(t, n)
	const listing = "GET /api/v1/resources/queues"
	outage := func(r *http.Request) (int, string, string) {
		return http.StatusServiceUnavailable, "", `{"error":"down"}`
	}
	raw := batchtest.Batch{FirstTS: 1, Records: batchtest.SampleRecords()[:1]}.Encode(t)
	burst := func(phase string) {
		t.Helper()
		listings, logged := dq.count(listing), out.Len()
		for range 100 {
			metadata(t, n, c, 9, false, "orders")
			resp, err := n.handleProduce(t.Context(), c, produceReq(9, -1, "orders", 0, raw))
			if err != nil {
				t.Fatalf("%s: produce: %v", phase, err)
			}
			if code := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code == 0 {
				t.Fatalf("%s: a produce was accepted during the outage", phase)
			}
		}
		if got := dq.count(listing) - listings; got > 2 {
			t.Errorf("%s: %d queue listings for 100 Metadata and 100 Produce requests, want at most 2", phase, got)
		}
		if got := strings.Count(out.From(logged), "level=WARN"); got > 4 {
			t.Errorf("%s: %d WARN lines for 200 requests, want at most 4:\n%s", phase, got, out.From(logged))
		}
	}

	dq.setFault(outage)
	burst("never listed")

	dq.setFault(nil)
	clk.Advance(catalogue.TTL)  // past any backoff
	metadata(t, n, c, 9, false) // the catalogue is loaded
	clk.Advance(catalogue.TTL)  // and stale
	dq.setFault(outage)
	burst("stale listing")
}
