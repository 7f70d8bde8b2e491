package registry

import "github.com/queen-mq/queen-kafka/internal/clock"

// Clock is the time seam: tests drive heartbeats and the boot watch with a
// fake clock shared with the dev broker's expiry.
type Clock = clock.Clock
