package registry

import (
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"
)

// Node ids of a cluster (seed 000): 0 is the single-node identity.
const (
	MinNodeID = 1
	MaxNodeID = 64
)

// ListLimit is the getPrefix page of a heartbeat: one page holds every
// possible node id.
const ListLimit = MaxNodeID

// CloseBudget bounds the fenced delete of Close. Missing it is only slower
// (peers drop the node one TTL later), never wrong.
const CloseBudget = 2 * time.Second

var clusterName = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Config is one node's registry identity and timing.
type Config struct {
	Cluster string // QUEEN_KAFKA_CLUSTER; the key prefix, not escaped
	NodeID  int32  // QUEEN_KAFKA_NODE_ID, 1 to 64
	Host    string // advertised host (QUEEN_KAFKA_ADVERTISED_ADDR)
	Port    int    // advertised port
	Version string // facade version, written into the row for operators

	Heartbeat time.Duration // QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS
	TTL       time.Duration // QUEEN_KAFKA_CLUSTER_TTL_MS

	// Incarnation identifies this process's hold on the id; empty draws a
	// random token. Tests set it to make rows recognisable.
	Incarnation string
	Clock       Clock        // nil is the wall clock
	Logger      *slog.Logger // nil is slog.Default()
}

func (c *Config) validate() error {
	var errs []error
	if !clusterName.MatchString(c.Cluster) {
		errs = append(errs, fmt.Errorf("cluster name %q is not 1 to 64 characters of [A-Za-z0-9._-]", c.Cluster))
	}
	if c.NodeID < MinNodeID || c.NodeID > MaxNodeID {
		errs = append(errs, fmt.Errorf("node id %d is outside %d to %d", c.NodeID, MinNodeID, MaxNodeID))
	}
	if c.Host == "" {
		errs = append(errs, errors.New("advertised host is empty"))
	}
	if c.Port < 1 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("advertised port %d is not a TCP port", c.Port))
	}
	if c.Heartbeat <= 0 {
		errs = append(errs, fmt.Errorf("heartbeat %v is not positive", c.Heartbeat))
	}
	if c.TTL < time.Second || c.TTL < 3*c.Heartbeat {
		// Under 3x one slow call evicts a healthy node (seed 000).
		errs = append(errs, fmt.Errorf("ttl %v must be at least 1s and three heartbeats (%v)", c.TTL, 3*c.Heartbeat))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("registry config: %w", err)
	}
	return nil
}

// ttlSeconds is the row's store expiry, max(1, TTL/1000) seconds (§10).
func (c *Config) ttlSeconds() int64 { return max(1, c.TTL.Milliseconds()/1000) }

// trust is how long after the send of the last successful heartbeat this
// node still answers with authority. The row was applied no earlier than
// that send, so it is live at the store until at least send + ttlSeconds;
// stepping down one heartbeat before that leaves peers' reads, which lag by
// up to a heartbeat, the margin to agree with us.
func (c *Config) trust() time.Duration {
	t := time.Duration(c.ttlSeconds())*time.Second - c.Heartbeat
	return max(t, c.Heartbeat)
}

// callBudget bounds one registry call so a hung call is a failed heartbeat
// within about one interval rather than a silent 10 s gap.
func (c *Config) callBudget() time.Duration {
	return min(max(c.Heartbeat, time.Second), c.trust())
}
