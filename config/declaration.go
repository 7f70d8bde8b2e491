package config

import (
	"context"
	"fmt"
	"strings"

	"github.com/sethvargo/go-envconfig"
)

// declaration is every environment variable of every program, and THE
// definition of each: go-envconfig reads its env tag (name and default),
// the loaders its range (an integer's bounds, checked by the mode that
// reads it), and --help and the README's table everything: accepts (what
// the value may be, when it is not a ranged integer), help (one line of
// meaning) and modes (which programs read it: facade is cmd/queen-kafka,
// embedded is queen-dev's supervisor of the facade, package supervisor,
// dev is queen-dev's own broker). Every field is text, so that the typed
// conversion of the mode that reads it can name the variable and what it
// accepts rather than surface a reflection error.
type declaration struct {
	QueenURL          string `env:"QUEEN_URL, default=http://localhost:6632" modes:"facade,embedded" accepts:"an http or https URL" help:"The Queen broker or proxy the facade calls; a trailing slash is dropped, a password in it never logged. In embedded mode, unset is the loopback of queen-dev's own listener."`
	QueenToken        string `env:"QUEEN_TOKEN" modes:"facade,embedded" accepts:"a bearer token" help:"Credential for Queen; never logged. With SASL on, a connection's own token replaces it. Required in cluster mode."`
	Addr              string `env:"QUEEN_KAFKA_ADDR, default=0.0.0.0:9092" modes:"facade" accepts:"host:port or [v6]:port" help:"The address the Kafka listener binds."`
	AdvertisedAddr    string `env:"QUEEN_KAFKA_ADVERTISED_ADDR" modes:"facade,embedded" accepts:"host:port clients can reach (required)" help:"What Metadata and FindCoordinator tell clients to connect to; not a wildcard, not QUEEN_KAFKA_ADDR."`
	HTTPAddr          string `env:"QUEEN_KAFKA_HTTP_ADDR" modes:"facade" accepts:"host:port or [v6]:port" help:"The operator HTTP listener: /metrics, /healthz, /readyz, /debug/pprof/. Unset: off."`
	DefaultPartitions string `env:"QUEEN_KAFKA_DEFAULT_PARTITIONS, default=1024" modes:"facade" range:"1..100000" help:"Partitions of an auto-created topic, and the floor of the width advertised for topics that declared none."`
	AutoCreateTopics  string `env:"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE, default=true" modes:"facade" accepts:"true or false" help:"auto.create.topics.enable: a Metadata request that allows it (every one below v4) creates the unknown topics it names. false: they are UNKNOWN_TOPIC_OR_PARTITION, as on a Kafka broker with the setting off."`
	MaxConnections    string `env:"QUEEN_KAFKA_MAX_CONNECTIONS, default=4096" modes:"facade" range:"16..1000000" help:"Connections served at once; past it a new connection is closed at once."`
	TLSCert           string `env:"QUEEN_KAFKA_TLS_CERT" modes:"facade" accepts:"a PEM certificate chain file" help:"TLS on the Kafka listener; with QUEEN_KAFKA_TLS_KEY, both or neither."`
	TLSKey            string `env:"QUEEN_KAFKA_TLS_KEY" modes:"facade" accepts:"a PEM private key file" help:"The certificate's key, loaded at boot."`
	SASL              string `env:"QUEEN_KAFKA_SASL" modes:"facade,embedded" accepts:"plain (case-insensitive)" help:"SASL/PLAIN on the listener: the password is the connection's Queen token. Unset: no authentication."`
	ForwardSNIHost    string `env:"QUEEN_KAFKA_FORWARD_SNI_HOST, default=false" modes:"facade" accepts:"true or false" help:"Send the TLS server name as the Host of the connection's calls to Queen; requires TLS."`
	GroupJoinDelay    string `env:"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS, default=3000" modes:"facade" range:"0..3600000" help:"group.initial.rebalance.delay.ms: how long an empty group's first join waits for company."`
	GroupMinSession   string `env:"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS, default=6000" modes:"facade" range:"1..3600000" help:"group.min.session.timeout.ms."`
	GroupMaxSession   string `env:"QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS, default=300000" modes:"facade" range:"1..3600000" help:"group.max.session.timeout.ms; never below the minimum."`
	CGHeartbeat       string `env:"QUEEN_KAFKA_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS, default=5000" modes:"facade" range:"1..3600000" help:"group.consumer.heartbeat.interval.ms: the interval KIP-848 consumer-protocol members are told to heartbeat at; below the session timeout."`
	CGSession         string `env:"QUEEN_KAFKA_CONSUMER_GROUP_SESSION_TIMEOUT_MS, default=45000" modes:"facade" range:"1..3600000" help:"group.consumer.session.timeout.ms: how long a KIP-848 consumer-protocol member may go without a heartbeat before it is removed from its group."`
	SGHeartbeat       string `env:"QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS, default=5000" modes:"facade" range:"1..3600000" help:"group.share.heartbeat.interval.ms: the interval KIP-932 share group members are told to heartbeat at (a group's share.heartbeat.interval.ms overrides it); below the session timeout."`
	SGSession         string `env:"QUEEN_KAFKA_SHARE_GROUP_SESSION_TIMEOUT_MS, default=45000" modes:"facade" range:"1..3600000" help:"group.share.session.timeout.ms: how long a share group member may go without a heartbeat before it is fenced and what it holds is released (a group's share.session.timeout.ms overrides it)."`
	SGMaxSize         string `env:"QUEEN_KAFKA_SHARE_GROUP_MAX_SIZE, default=200" modes:"facade" range:"1..1000" help:"group.share.max.size: the members one share group may have; a join past it is GROUP_MAX_SIZE_REACHED."`
	TxnMaxBytes       string `env:"QUEEN_KAFKA_TXN_MAX_BYTES, default=50331648" modes:"facade" range:"1..1073741824" help:"Staged record bytes one transaction may hold until its commit; never above QUEEN_KAFKA_TXN_MAX_STAGED_BYTES. The default is what one commit body can carry: 3/4 of Queen's 64 MiB, base64 taking the rest."`
	TxnMaxRecords     string `env:"QUEEN_KAFKA_TXN_MAX_RECORDS, default=699050" modes:"facade" range:"1..10000000" help:"Staged records in one transaction. The default is the most one 64 MiB commit body can carry (no record adds less than 96 bytes)."`
	TxnMaxStaged      string `env:"QUEEN_KAFKA_TXN_MAX_STAGED_BYTES, default=150994944" modes:"facade" range:"1..17179869184" help:"Staged bytes across every open transaction of the process: by default three transactions at the commit body's ceiling."`
	QueenMaxBody      string `env:"QUEEN_KAFKA_QUEEN_MAX_BODY_BYTES, default=67108864" modes:"facade" range:"1048576..17179869184" help:"Queen's request body ceiling (its QUEEN_MAX_BODY_BYTES): a transaction's commit is one Queen transaction, so a batch that would take the commit body past it is MESSAGE_TOO_LARGE."`
	TxnMaxOpen        string `env:"QUEEN_KAFKA_TXN_MAX_OPEN, default=1024" modes:"facade" range:"1..1000000" help:"Transactions open at once in the process."`
	TxnMaxTimeout     string `env:"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS, default=900000" modes:"facade" range:"1..86400000" help:"transaction.max.timeout.ms: the ceiling on a producer's transaction timeout."`
	TxnVersion        string `env:"QUEEN_KAFKA_TRANSACTION_VERSION, default=2" modes:"facade" range:"0..2" help:"The transaction.version feature finalized in ApiVersions: 2 is KIP-890 (the epoch bumps at every commit and abort, partitions and offsets added implicitly); 0 or 1 keeps clients on the old protocol, with EndTxn and TxnOffsetCommit capped at v4."`
	DedupWindow       string `env:"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS, default=900" modes:"facade" range:"0..604800" help:"dedupWindowSeconds of every queue the facade creates: how long Queen answers a retried idempotent batch with its original offsets. 0 leaves Queen's default."`
	DedupKeys         string `env:"QUEEN_KAFKA_DEDUP_KEYS, default=true" modes:"facade" accepts:"true or false" help:"Send each idempotent record's dedup key to Queen. false exists only to measure the keys' cost: a retry after a lost answer may then be stored twice."`
	FetchCompression  string `env:"QUEEN_KAFKA_FETCH_COMPRESSION, default=none" modes:"facade" accepts:"none, gzip, snappy, lz4 or zstd" help:"The codec fetch answers use for topics whose compression.type is unset (zstd from Fetch v10 only); a topic's own compression.type wins. Stored records are never changed."`
	MemoryLimit       string `env:"QUEEN_KAFKA_MEMORY_LIMIT, default=auto" modes:"facade" accepts:"auto, or a size from 32MiB to 1TiB: bytes, or with a B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti) suffix" help:"The Go memory limit set at boot. auto: 90% of the container's memory limit (cgroup v2 memory.max or v1 memory.limit_in_bytes), none without one. A set GOMEMLIMIT wins."`
	GoMemLimit        string `env:"GOMEMLIMIT" modes:"facade" accepts:"Go's syntax, e.g. 460MiB, or off" help:"Go's own memory limit, applied by the Go runtime; when set it wins over QUEEN_KAFKA_MEMORY_LIMIT."`
	LogLevel          string `env:"LOG_LEVEL, default=info" modes:"facade" accepts:"trace, debug, info, warn, error or off, optionally with target=level directives" help:"Log level; the first bare level of an EnvFilter-like value wins."`
	RustLog           string `env:"RUST_LOG" modes:"facade" accepts:"as LOG_LEVEL" help:"Same as LOG_LEVEL, and wins over it."`
	LogJSON           string `env:"QUEEN_LOG_JSON, default=false" modes:"facade" accepts:"true, anything else is false" help:"Log lines as JSON."`
	NodeID            string `env:"QUEEN_KAFKA_NODE_ID" modes:"facade" range:"1..64" help:"Cluster mode's switch and this node's id; unset is single mode (0 is reserved for it)."`
	Cluster           string `env:"QUEEN_KAFKA_CLUSTER, default=queen" modes:"facade" accepts:"1 to 64 of [A-Za-z0-9._-]" help:"The cluster name: the registry key prefix and the cluster_id clients see. Cluster mode only."`
	ClusterHeartbeat  string `env:"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS, default=2000" modes:"facade" range:"500..30000" help:"How often a node refreshes its registry row and reads the live set. Cluster mode only."`
	ClusterTTL        string `env:"QUEEN_KAFKA_CLUSTER_TTL_MS, default=10000" modes:"facade" range:"3000..120000" help:"How long a silent node's row lives; at least three heartbeats. Cluster mode only."`

	Embedded string `env:"QUEEN_KAFKA_EMBEDDED, default=false" modes:"embedded" accepts:"true or false" help:"true makes queen-dev spawn and supervise the facade as its child process, which then needs QUEEN_KAFKA_ADVERTISED_ADDR. Off, queen-dev reads no other variable of embedded mode."`
	Bin      string `env:"QUEEN_KAFKA_BIN" modes:"embedded" accepts:"an executable file" help:"The facade binary, resolved at boot; unset: the queen-kafka file beside the queen-dev executable (make build puts both in bin/)."`
	Grace    string `env:"QUEEN_KAFKA_SHUTDOWN_GRACE_MS, default=5000" modes:"embedded" range:"0..3600000" help:"How long a stopping child has between SIGTERM and SIGKILL; below 100 counts as 100 (a grace of zero is a SIGKILL with extra steps)."`

	DevAddr    string `env:"QUEEN_DEV_ADDR, default=127.0.0.1:6632" modes:"dev" accepts:"host:port or [v6]:port" help:"queen-dev's listen address (port 0: any free port)."`
	DevData    string `env:"QUEEN_DEV_DATA, default=./.queen-dev" modes:"dev" accepts:"a directory (set, never blank)" help:"Data directory: the embedded store (pebble). Delete it to start empty."`
	DevCache   string `env:"QUEEN_DEV_CACHE_SIZE, default=64MiB" modes:"dev" accepts:"a size from 32MiB to 1TiB: bytes, or with a B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti) suffix" help:"The store's block cache: most of queen-dev's memory beside at most 16 MiB of memtables, whatever is stored."`
	DevFsync   string `env:"QUEEN_DEV_FSYNC, default=1s" modes:"dev" accepts:"always, or a duration from 10ms to 1m (Go syntax: 250ms, 1s)" help:"When the store's write-ahead log is fsynced. A duration: a write is acknowledged once its log record is written to the file (it survives kill -9 of queen-dev), and the log is fsynced that often in the background, so an OS crash or power loss loses at most about that much. always: every acknowledgement waits for its fsync (concurrent requests share one)."`
	DevPprof   string `env:"QUEEN_DEV_PPROF_ADDR" modes:"dev" accepts:"host:port or [v6]:port" help:"A listener serving Go's /debug/pprof/ for profiling queen-dev (bind it to loopback). Unset: off."`
	DevTokens  string `env:"QUEEN_DEV_TOKENS" modes:"dev" accepts:"token=tenant[:ro|:wo|:rw|:admin], comma-separated" help:"Turns auth on, queues and KV per tenant; unset: auth off, one default tenant. Never logged, never passed to an embedded facade."`
	DevFaults  string `env:"QUEEN_DEV_FAULTS, default=false" modes:"dev" accepts:"true or false" help:"true enables fault injection (/dev/faults) for loopback callers, with an :admin token when QUEEN_DEV_TOKENS is set."`
	DevMaxBody string `env:"QUEEN_MAX_BODY_BYTES, default=67108864" modes:"dev" accepts:"a positive integer" help:"Request body ceiling in bytes (413 above)."`
}

// environment is what go-envconfig looks a mode's variables up in. A
// present-but-blank variable counts as unset: an empty value in a Compose
// file or a Helm template is a variable somebody meant to set, never a
// value, so it must fall to the default (or to "required"). A variable of
// another mode is never looked up, so a loader reads only what its mode
// declares. And it remembers what was set, since an unset variable is not
// always its default (QUEEN_KAFKA_CLUSTER without cluster mode, QUEEN_URL
// in embedded mode, a blank QUEEN_DEV_DATA).
type environment struct {
	l     envconfig.Lookuper
	mode  Mode
	set   map[string]bool // set and not blank
	blank map[string]bool // set, but blank
}

func (e *environment) Lookup(key string) (string, bool) {
	if v, ok := declared(key); !ok || v.Modes&e.mode == 0 {
		return "", false
	}
	v, ok := e.l.Lookup(key)
	if !ok {
		return "", false
	}
	if v = strings.TrimSpace(v); v == "" {
		e.blank[key] = true
		return "", false
	}
	e.set[key] = true
	return v, true
}

// read fills the declaration from l with the variables mode reads; every
// other field holds its default.
func read(ctx context.Context, l envconfig.Lookuper, mode Mode) (*declaration, *environment, error) {
	env := &environment{l: l, mode: mode, set: map[string]bool{}, blank: map[string]bool{}}
	var d declaration
	if err := envconfig.ProcessWith(ctx, &envconfig.Config{Target: &d, Lookuper: env}); err != nil {
		return nil, nil, fmt.Errorf("configuration: %w", err)
	}
	return &d, env, nil
}
