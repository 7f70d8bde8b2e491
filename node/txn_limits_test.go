package node

import (
	"context"
	"testing"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/txn"
)

// The declaration's defaults of the transaction caps are the ones package
// txn derives from one commit's body (issue 23): the two never drift.
func TestTxnLimitsDefaultsAreDerived(t *testing.T) {
	cfg, err := config.LoadFacade(context.Background(), envconfig.MapLookuper(testEnv("http://127.0.0.1:1")))
	if err != nil {
		t.Fatal(err)
	}
	if got := txnLimits(cfg); got != txn.DefaultLimits {
		t.Fatalf("the configured defaults %+v are not txn's derived ones %+v", got, txn.DefaultLimits)
	}
}
