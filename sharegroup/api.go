package sharegroup

import (
	"context"
	"log/slog"
	"time"

	"github.com/queen-mq/queen-kafka/consumergroup"
	"github.com/queen-mq/queen-kafka/internal/clock"
	"github.com/queen-mq/queen-kafka/ownership"
	"github.com/queen-mq/queen-kafka/queen"
)

// Kafka's broker defaults (GroupCoordinatorConfig, ShareGroupConfig).
const (
	DefaultHeartbeatInterval = 5 * time.Second  // group.share.heartbeat.interval.ms
	DefaultSessionTimeout    = 45 * time.Second // group.share.session.timeout.ms
	DefaultMaxSize           = 200              // group.share.max.size
	// AssignorName is the one server assignor a share group has.
	AssignorName = "simple"
)

// KV is the one Queen route the package needs; *queen.Client satisfies it.
type KV = queen.KVCaller

// Topic is a topic a member may subscribe to (the same as a consumer
// group's, so one catalogue adapter serves both).
type Topic = consumergroup.Topic

// Topics is the caller's catalogue as a group sees it.
type Topics = consumergroup.Topics

// Client is who sent a request: the client id and host ShareGroupDescribe
// reports, the identity that files the group, the credential its KV calls
// carry (required here) and its catalogue (nil lists no topics); the same
// as a consumer group's, so that one adapter serves both.
type Client = consumergroup.Client

// GroupSettings are a group's own overrides (Kafka's GROUP config
// resource); a zero field keeps the broker-level value.
type GroupSettings struct {
	HeartbeatInterval time.Duration // share.heartbeat.interval.ms
	SessionTimeout    time.Duration // share.session.timeout.ms
}

// Config is how a Manager is built.
type Config struct {
	HeartbeatInterval time.Duration // 0 is DefaultHeartbeatInterval
	SessionTimeout    time.Duration // 0 is DefaultSessionTimeout
	MaxSize           int           // members per group; 0 is DefaultMaxSize
	Ownership         ownership.Owners
	// Fenced moves qk:fence:<group> when a group is taken over (cluster
	// mode), in the coordinator's format with NodeID and Incarnation.
	Fenced      bool
	NodeID      int32
	Incarnation string
	Log         *slog.Logger
	Clock       clock.Timers // nil is clock.Wall
	// OnMemberGone is called (without locks held, on the owner) when a
	// member leaves or is fenced, so that what it holds is released.
	OnMemberGone func(ctx context.Context, kv KV, group, member string)
	// GroupConfig, when set, answers a group's own settings.
	GroupConfig func(ctx context.Context, kv KV, group string) (GroupSettings, error)
	// Others, when set, reports whether another group type (classic or
	// consumer) holds group: a group id is one type, so a share group
	// never takes it (Kafka answers "Group … is not a share group.").
	Others func(ctx context.Context, identity string, kv KV, group string) (held bool, code int16)
}
