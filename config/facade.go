package config

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/internal/memlimit"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/queen"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

// Facade is the whole facade configuration, validated: a Facade returned by
// LoadFacade is one the listener may bind with. Every field comes from one
// variable of the declaration (declaration.go).
type Facade struct {
	QueenURL   string // QUEEN_URL, normalised (no trailing slash)
	QueenToken string // QUEEN_TOKEN; never logged

	Addr           string // QUEEN_KAFKA_ADDR, what the listener binds
	HTTPAddr       string // QUEEN_KAFKA_HTTP_ADDR, the operator listener; "" is off
	AdvertisedAddr string // QUEEN_KAFKA_ADVERTISED_ADDR, as given
	AdvertisedHost string // its host, unbracketed
	AdvertisedPort int32  // its port

	DefaultPartitions int32 // QUEEN_KAFKA_DEFAULT_PARTITIONS
	AutoCreateTopics  bool  // QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE: auto.create.topics.enable
	MaxConnections    int   // QUEEN_KAFKA_MAX_CONNECTIONS

	TLSCertificate *tls.Certificate // QUEEN_KAFKA_TLS_CERT and _KEY loaded, nil without TLS
	SASL           string           // QUEEN_KAFKA_SASL: "" or "plain"
	ForwardSNIHost bool             // QUEEN_KAFKA_FORWARD_SNI_HOST

	GroupJoinDelay         time.Duration // QUEEN_KAFKA_GROUP_JOIN_DELAY_MS
	GroupMinSessionTimeout time.Duration // QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS
	GroupMaxSessionTimeout time.Duration // QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS
	// KIP-848 consumer-protocol groups (package consumergroup).
	ConsumerGroupHeartbeatInterval time.Duration // QUEEN_KAFKA_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS
	ConsumerGroupSessionTimeout    time.Duration // QUEEN_KAFKA_CONSUMER_GROUP_SESSION_TIMEOUT_MS
	// KIP-932 share groups (package sharegroup).
	ShareGroupHeartbeatInterval time.Duration // QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS
	ShareGroupSessionTimeout    time.Duration // QUEEN_KAFKA_SHARE_GROUP_SESSION_TIMEOUT_MS
	ShareGroupMaxSize           int           // QUEEN_KAFKA_SHARE_GROUP_MAX_SIZE

	TxnMaxBytes       int64         // QUEEN_KAFKA_TXN_MAX_BYTES
	TxnMaxRecords     int           // QUEEN_KAFKA_TXN_MAX_RECORDS
	TxnMaxStagedBytes int64         // QUEEN_KAFKA_TXN_MAX_STAGED_BYTES
	QueenMaxBody      int64         // QUEEN_KAFKA_QUEEN_MAX_BODY_BYTES
	TxnMaxOpen        int           // QUEEN_KAFKA_TXN_MAX_OPEN
	TxnMaxTimeout     time.Duration // QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS
	TxnVersion        int16         // QUEEN_KAFKA_TRANSACTION_VERSION

	// DedupWindowSeconds is the dedupWindowSeconds of every queue the
	// facade creates (0: leave Queen's own default). DedupKeys puts each
	// idempotent or transactional record's Queen transactionId on its
	// push; false (QUEEN_KAFKA_DEDUP_KEYS=false) exists only to measure what
	// the keys cost, and gives up deduplicating a retry the window lost.
	DedupWindowSeconds int  // QUEEN_KAFKA_DEDUP_WINDOW_SECONDS
	DedupKeys          bool // QUEEN_KAFKA_DEDUP_KEYS

	// FetchCompression is the codec (recordbatch.Codec*) of the fetch
	// answers of every topic whose compression.type is unset: the
	// broker-wide compression.type of a Kafka broker.
	FetchCompression int // QUEEN_KAFKA_FETCH_COMPRESSION

	// MemoryLimit is QUEEN_KAFKA_MEMORY_LIMIT in bytes, 0 for auto (a
	// share of the container's limit, decided at boot by package
	// memlimit). GoMemLimit is GOMEMLIMIT as set ("" when not), which the
	// Go runtime applied itself and which wins.
	MemoryLimit int64  // QUEEN_KAFKA_MEMORY_LIMIT
	GoMemLimit  string // GOMEMLIMIT

	LogLevel slog.Level // LOG_LEVEL, or RUST_LOG when set
	LogJSON  bool       // QUEEN_LOG_JSON

	// Cluster mode. NodeID 0 is single mode, the only identity it can have.
	NodeID           int           // QUEEN_KAFKA_NODE_ID, 1..64 when clustered
	Cluster          string        // QUEEN_KAFKA_CLUSTER, also the cluster_id clients see
	ClusterHeartbeat time.Duration // QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS
	ClusterTTL       time.Duration // QUEEN_KAFKA_CLUSTER_TTL_MS
}

// LogValue is what slog prints for a Facade, whatever the line or handler:
// the boot line's fields, with QUEEN_TOKEN reduced to whether there is one
// and a password in QUEEN_URL replaced by xxxxx (and never the TLS key).
func (c Facade) LogValue() slog.Value {
	sasl := "none"
	if c.SASL != "" {
		sasl = c.SASL
	}
	http := "off"
	if c.HTTPAddr != "" {
		http = c.HTTPAddr
	}
	return slog.GroupValue(
		slog.String("version", version.String()),
		slog.String("queen_url", queen.RedactURL(c.QueenURL)),
		slog.Bool("authenticated", c.QueenToken != ""),
		slog.String("listen", c.Addr),
		slog.String("advertised", c.AdvertisedAddr),
		slog.String("http", http),
		slog.Int("default_partitions", int(c.DefaultPartitions)),
		slog.Bool("auto_create_topics", c.AutoCreateTopics),
		slog.Int64("group_join_delay_ms", c.GroupJoinDelay.Milliseconds()),
		slog.Bool("tls", c.TLSEnabled()),
		slog.String("sasl", sasl),
		slog.Bool("forward_sni_host", c.ForwardSNIHost),
		slog.Int("dedup_window_s", c.DedupWindowSeconds),
		slog.Bool("dedup_keys", c.DedupKeys),
		slog.String("fetch_compression", fetchCompressionName(c.FetchCompression)),
		slog.Int("node_id", c.NodeID),
		slog.String("cluster", c.Cluster),
	)
}

// Clustered reports whether QUEEN_KAFKA_NODE_ID was set.
func (c Facade) Clustered() bool { return c.NodeID != 0 }

// TLSEnabled reports whether the listener serves TLS.
func (c Facade) TLSEnabled() bool { return c.TLSCertificate != nil }

// LoadFacade reads and validates every variable of the facade through l
// (the OS environment in the binary, an envconfig.MapLookuper in tests).
// The error names the variable at fault and what it accepts.
func LoadFacade(ctx context.Context, l envconfig.Lookuper) (Facade, error) {
	raw, env, err := read(ctx, l, FacadeMode)
	if err != nil {
		return Facade{}, err
	}
	var c Facade

	if c.QueenURL, err = queen.ParseURL(raw.QueenURL); err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL, password included
		}
		return Facade{}, fmt.Errorf("QUEEN_URL=%q is not an http or https URL: %w", queen.RedactURL(raw.QueenURL), err)
	}
	c.QueenToken = raw.QueenToken

	if err := checkListenAddr("QUEEN_KAFKA_ADDR", raw.Addr); err != nil {
		return Facade{}, err
	}
	c.Addr = raw.Addr
	if raw.HTTPAddr != "" {
		if err := checkListenAddr("QUEEN_KAFKA_HTTP_ADDR", raw.HTTPAddr); err != nil {
			return Facade{}, err
		}
		c.HTTPAddr = raw.HTTPAddr
	}
	if c.AdvertisedHost, c.AdvertisedPort, err = parseAdvertised(raw.AdvertisedAddr); err != nil {
		return Facade{}, err
	}
	c.AdvertisedAddr = raw.AdvertisedAddr

	// Each integer's name and range are its declaration tags.
	ints := []struct {
		field string
		dst   func(int64)
	}{
		{"DefaultPartitions", func(v int64) { c.DefaultPartitions = int32(v) }},
		{"MaxConnections", func(v int64) { c.MaxConnections = int(v) }},
		{"GroupJoinDelay", func(v int64) { c.GroupJoinDelay = ms(v) }},
		{"GroupMinSession", func(v int64) { c.GroupMinSessionTimeout = ms(v) }},
		{"GroupMaxSession", func(v int64) { c.GroupMaxSessionTimeout = ms(v) }},
		{"CGHeartbeat", func(v int64) { c.ConsumerGroupHeartbeatInterval = ms(v) }},
		{"CGSession", func(v int64) { c.ConsumerGroupSessionTimeout = ms(v) }},
		{"SGHeartbeat", func(v int64) { c.ShareGroupHeartbeatInterval = ms(v) }},
		{"SGSession", func(v int64) { c.ShareGroupSessionTimeout = ms(v) }},
		{"SGMaxSize", func(v int64) { c.ShareGroupMaxSize = int(v) }},
		{"TxnMaxBytes", func(v int64) { c.TxnMaxBytes = v }},
		{"TxnMaxRecords", func(v int64) { c.TxnMaxRecords = int(v) }},
		{"TxnMaxStaged", func(v int64) { c.TxnMaxStagedBytes = v }},
		{"QueenMaxBody", func(v int64) { c.QueenMaxBody = v }},
		{"TxnMaxOpen", func(v int64) { c.TxnMaxOpen = int(v) }},
		{"TxnMaxTimeout", func(v int64) { c.TxnMaxTimeout = ms(v) }},
		{"TxnVersion", func(v int64) { c.TxnVersion = int16(v) }},
		{"DedupWindow", func(v int64) { c.DedupWindowSeconds = int(v) }},
	}
	for _, f := range ints {
		v, err := raw.integer(f.field)
		if err != nil {
			return Facade{}, err
		}
		f.dst(v)
	}
	if c.GroupMinSessionTimeout > c.GroupMaxSessionTimeout {
		return Facade{}, fmt.Errorf("QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS (%d) is above QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS (%d): every consumer would be refused INVALID_SESSION_TIMEOUT; the minimum must not exceed the maximum",
			c.GroupMinSessionTimeout.Milliseconds(), c.GroupMaxSessionTimeout.Milliseconds())
	}
	if c.ConsumerGroupHeartbeatInterval >= c.ConsumerGroupSessionTimeout {
		// Kafka's GroupCoordinatorConfig requires the same.
		return Facade{}, fmt.Errorf("QUEEN_KAFKA_CONSUMER_GROUP_HEARTBEAT_INTERVAL_MS (%d) must be below QUEEN_KAFKA_CONSUMER_GROUP_SESSION_TIMEOUT_MS (%d): every member would be expired between two heartbeats",
			c.ConsumerGroupHeartbeatInterval.Milliseconds(), c.ConsumerGroupSessionTimeout.Milliseconds())
	}
	if c.ShareGroupHeartbeatInterval >= c.ShareGroupSessionTimeout {
		// Kafka's GroupCoordinatorConfig requires the same.
		return Facade{}, fmt.Errorf("QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS (%d) must be below QUEEN_KAFKA_SHARE_GROUP_SESSION_TIMEOUT_MS (%d): every member would be expired between two heartbeats",
			c.ShareGroupHeartbeatInterval.Milliseconds(), c.ShareGroupSessionTimeout.Milliseconds())
	}
	if c.TxnMaxBytes > c.TxnMaxStagedBytes {
		return Facade{}, fmt.Errorf("QUEEN_KAFKA_TXN_MAX_BYTES (%d) is above QUEEN_KAFKA_TXN_MAX_STAGED_BYTES (%d): one transaction may never hold more than the whole process budget",
			c.TxnMaxBytes, c.TxnMaxStagedBytes)
	}

	if err := c.loadTLS(raw); err != nil {
		return Facade{}, err
	}
	switch strings.ToLower(raw.SASL) {
	case "":
	case "plain":
		c.SASL = "plain"
	default:
		return Facade{}, fmt.Errorf("QUEEN_KAFKA_SASL=%q is not a supported mechanism: the only value is plain (case-insensitive), or unset for no authentication", raw.SASL)
	}
	if c.ForwardSNIHost, err = parseBool("QUEEN_KAFKA_FORWARD_SNI_HOST", raw.ForwardSNIHost); err != nil {
		return Facade{}, err
	}
	if c.DedupKeys, err = parseBool("QUEEN_KAFKA_DEDUP_KEYS", raw.DedupKeys); err != nil {
		return Facade{}, err
	}
	if c.AutoCreateTopics, err = parseBool("QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE", raw.AutoCreateTopics); err != nil {
		return Facade{}, err
	}
	if c.FetchCompression, err = parseFetchCompression(raw.FetchCompression); err != nil {
		return Facade{}, err
	}
	if c.ForwardSNIHost && !c.TLSEnabled() {
		return Facade{}, errors.New("QUEEN_KAFKA_FORWARD_SNI_HOST=true requires TLS (QUEEN_KAFKA_TLS_CERT and QUEEN_KAFKA_TLS_KEY): a plaintext connection carries no server name to forward")
	}

	if raw.MemoryLimit != "auto" {
		if c.MemoryLimit, err = memlimit.ParseSize(raw.MemoryLimit); err != nil {
			return Facade{}, fmt.Errorf("QUEEN_KAFKA_MEMORY_LIMIT=%q is invalid: %w, or auto", raw.MemoryLimit, err)
		}
	}
	c.GoMemLimit = raw.GoMemLimit

	level := raw.LogLevel
	levelVar := "LOG_LEVEL"
	if raw.RustLog != "" {
		level, levelVar = raw.RustLog, "RUST_LOG"
	}
	if c.LogLevel, err = ParseLogLevel(levelVar, level); err != nil {
		return Facade{}, err
	}
	c.LogJSON = raw.LogJSON == "true"

	if err := c.loadCluster(raw, env); err != nil {
		return Facade{}, err
	}
	return c, nil
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

func parseRange(name, raw string, min, max int64) (int64, error) {
	v, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || v < min || v > max {
		return 0, fmt.Errorf("%s=%q is invalid: expected an integer in %d to %d", name, raw, min, max)
	}
	return v, nil
}

// parseFetchCompression reads QUEEN_KAFKA_FETCH_COMPRESSION: none, or one
// of Kafka's codec names (case-insensitive).
func parseFetchCompression(raw string) (int, error) {
	v := strings.ToLower(raw)
	if v == "none" {
		return recordbatch.CodecNone, nil
	}
	if c, ok := recordbatch.CodecByName(v); ok && c != recordbatch.CodecNone {
		return c, nil
	}
	return 0, fmt.Errorf("QUEEN_KAFKA_FETCH_COMPRESSION=%q is invalid: expected none, gzip, snappy, lz4 or zstd", raw)
}

// fetchCompressionName is QUEEN_KAFKA_FETCH_COMPRESSION's spelling of c.
func fetchCompressionName(c int) string {
	if c == recordbatch.CodecNone {
		return "none"
	}
	return recordbatch.CodecName(c)
}

func parseBool(name, raw string) (bool, error) {
	switch raw {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s=%q is invalid: expected true or false", name, raw)
}

func (c *Facade) loadTLS(raw *declaration) error {
	switch {
	case raw.TLSCert == "" && raw.TLSKey == "":
		return nil
	case raw.TLSCert == "":
		return errors.New("QUEEN_KAFKA_TLS_KEY is set without QUEEN_KAFKA_TLS_CERT: TLS needs both files or neither")
	case raw.TLSKey == "":
		return errors.New("QUEEN_KAFKA_TLS_CERT is set without QUEEN_KAFKA_TLS_KEY: TLS needs both files or neither")
	}
	pair, err := tls.LoadX509KeyPair(raw.TLSCert, raw.TLSKey)
	if err != nil {
		return fmt.Errorf("QUEEN_KAFKA_TLS_CERT=%q and QUEEN_KAFKA_TLS_KEY=%q do not load as a PEM certificate and its private key: %w", raw.TLSCert, raw.TLSKey, err)
	}
	c.TLSCertificate = &pair
	return nil
}

func (c *Facade) loadCluster(raw *declaration, env *environment) error {
	c.Cluster = raw.Cluster
	if raw.NodeID == "" {
		if env.set["QUEEN_KAFKA_CLUSTER"] {
			return fmt.Errorf("QUEEN_KAFKA_CLUSTER=%q is set without QUEEN_KAFKA_NODE_ID: the cluster name only means something in cluster mode, which QUEEN_KAFKA_NODE_ID (1 to 64) turns on", raw.Cluster)
		}
		return nil
	}
	id, err := raw.integer("NodeID")
	if err != nil {
		return fmt.Errorf("%w (0 is reserved for the single-node identity; leave it unset for single mode)", err)
	}
	c.NodeID = int(id)
	if !validClusterName(raw.Cluster) {
		return fmt.Errorf("QUEEN_KAFKA_CLUSTER=%q is invalid: expected 1 to 64 characters of [A-Za-z0-9._-]", raw.Cluster)
	}
	hb, err := raw.integer("ClusterHeartbeat")
	if err != nil {
		return err
	}
	ttl, err := raw.integer("ClusterTTL")
	if err != nil {
		return err
	}
	if ttl < 3*hb {
		return fmt.Errorf("QUEEN_KAFKA_CLUSTER_TTL_MS (%d) is below three times QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS (%d): one slow call to Queen would evict a healthy node; expected at least %d", ttl, hb, 3*hb)
	}
	c.ClusterHeartbeat, c.ClusterTTL = ms(hb), ms(ttl)
	if c.QueenToken == "" {
		return errors.New("QUEEN_TOKEN is required in cluster mode (QUEEN_KAFKA_NODE_ID is set): the node registry is written with this process's own credential, and every node must present one Queen tenant")
	}
	return nil
}

// clusterNameByte is a byte of [A-Za-z0-9._-], the characters of a Kafka
// topic name, so that the name is safe in a registry key.
func clusterNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func validClusterName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !clusterNameByte(s[i]) {
			return false
		}
	}
	return true
}

// checkListenAddr checks a bind address, name being its variable.
func checkListenAddr(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s=%q is invalid: expected host:port or [v6]:port: %v", name, addr, err)
	}
	if host != "" && net.ParseIP(host) == nil && strings.ContainsAny(host, "[]") {
		return fmt.Errorf("%s=%q is invalid: expected host:port or [v6]:port", name, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%s=%q is invalid: the port must be an integer in 0 to 65535", name, addr)
	}
	return nil
}

// parseAdvertised applies "the advertised address is the footgun": each way
// of getting it wrong has its own message, because every symptom of a wrong
// advertised address shows up one step away from its cause.
func parseAdvertised(addr string) (string, int32, error) {
	const v = "QUEEN_KAFKA_ADVERTISED_ADDR"
	if addr == "" {
		return "", 0, errors.New(v + " is required and has no default: it is the host:port Kafka clients are told to connect to " +
			"after bootstrap (every Metadata and FindCoordinator answer carries it), so it must be what your clients resolve and route to. " +
			"It is not QUEEN_KAFKA_ADDR, which is the local address this process binds")
	}
	if !strings.HasPrefix(addr, "[") && strings.Count(addr, ":") > 1 {
		suggest := "[" + addr + "]:9092"
		if i := strings.LastIndexByte(addr, ':'); i > 0 {
			if ip := net.ParseIP(addr[:i]); ip != nil {
				suggest = "[" + addr[:i] + "]:" + addr[i+1:]
			}
		}
		return "", 0, fmt.Errorf("%s=%q is a bare IPv6 address: write it bracketed with a port, e.g. %s", v, addr, suggest)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return "", 0, fmt.Errorf("%s=%q has no port: expected host:port, e.g. %s:9092", v, addr, strings.Trim(addr, "[]"))
		}
		return "", 0, fmt.Errorf("%s=%q is invalid: expected host:port or [v6]:port: %v", v, addr, err)
	}
	if port == "" {
		return "", 0, fmt.Errorf("%s=%q has no port: expected host:port, e.g. %s9092", v, addr, addr)
	}
	if host == "" {
		return "", 0, fmt.Errorf("%s=%q has an empty host: expected the host name or address clients connect to, e.g. kafka.example.com%s", v, addr, addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return "", 0, fmt.Errorf("%s=%q is a wildcard address: a client handed %s as the address to connect to fails right after bootstrap. "+
			"The wildcard belongs in QUEEN_KAFKA_ADDR (what gets bound); advertise the name or address clients reach this process by", v, addr, host)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("%s=%q has a bad port %q: expected an integer in 1 to 65535", v, addr, port)
	}
	return host, int32(p), nil
}
