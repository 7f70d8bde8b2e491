package sharefetch

import (
	"github.com/queen-mq/queen-kafka/metrics"
	"github.com/queen-mq/queen-kafka/sharegroup"
)

// The group side's Manager answers the member check as it is; the node's
// metrics hear the share events.
var (
	_ Members  = (*sharegroup.Manager)(nil)
	_ Observer = (*metrics.Metrics)(nil)
)
