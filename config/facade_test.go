package config

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/recordbatch"
)

func baseEnv() map[string]string {
	return map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka.example.com:9092"}
}

func loadEnv(t *testing.T, env map[string]string) (Facade, error) {
	t.Helper()
	return LoadFacade(context.Background(), envconfig.MapLookuper(env))
}

func TestConfigDefaults(t *testing.T) {
	c, err := loadEnv(t, baseEnv())
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"QueenURL", c.QueenURL, "http://localhost:6632"},
		{"Addr", c.Addr, "0.0.0.0:9092"},
		{"AdvertisedHost", c.AdvertisedHost, "kafka.example.com"},
		{"AdvertisedPort", c.AdvertisedPort, int32(9092)},
		{"DefaultPartitions", c.DefaultPartitions, int32(1024)},
		{"MaxConnections", c.MaxConnections, 4096},
		{"GroupJoinDelay", c.GroupJoinDelay, 3 * time.Second},
		{"GroupMinSessionTimeout", c.GroupMinSessionTimeout, 6 * time.Second},
		{"GroupMaxSessionTimeout", c.GroupMaxSessionTimeout, 300 * time.Second},
		{"TxnMaxBytes", c.TxnMaxBytes, int64(50331648)},
		{"TxnMaxRecords", c.TxnMaxRecords, 699050},
		{"TxnMaxStagedBytes", c.TxnMaxStagedBytes, int64(150994944)},
		{"QueenMaxBody", c.QueenMaxBody, int64(67108864)},
		{"TxnMaxOpen", c.TxnMaxOpen, 1024},
		{"TxnMaxTimeout", c.TxnMaxTimeout, 900 * time.Second},
		{"DedupWindowSeconds", c.DedupWindowSeconds, 900},
		{"DedupKeys", c.DedupKeys, true},
		{"AutoCreateTopics", c.AutoCreateTopics, true}, // Kafka's default
		{"FetchCompression", c.FetchCompression, recordbatch.CodecNone},
		{"LogLevel", c.LogLevel, slog.LevelInfo},
		{"LogJSON", c.LogJSON, false},
		{"NodeID", c.NodeID, 0},
		{"Cluster", c.Cluster, "queen"},
		{"SASL", c.SASL, ""},
		{"TLS", c.TLSEnabled(), false},
		{"ForwardSNIHost", c.ForwardSNIHost, false},
		{"HTTPAddr", c.HTTPAddr, ""}, // the operator listener is off unless asked for
	}
	for _, ch := range checks {
		if ch.got != ch.want {
			t.Errorf("%s = %v, want %v", ch.name, ch.got, ch.want)
		}
	}
}

func TestConfigValues(t *testing.T) {
	env := baseEnv()
	for k, v := range map[string]string{
		"QUEEN_URL":                             "https://queen.example.com/",
		"QUEEN_TOKEN":                           "secret",
		"QUEEN_KAFKA_ADDR":                      "[::]:9093",
		"QUEEN_KAFKA_ADVERTISED_ADDR":           "[2001:db8::1]:9093",
		"QUEEN_KAFKA_DEFAULT_PARTITIONS":        " 12 ",
		"QUEEN_KAFKA_SASL":                      "PLAIN",
		"QUEEN_KAFKA_NODE_ID":                   "3",
		"QUEEN_KAFKA_CLUSTER":                   "eu-1.prod",
		"QUEEN_KAFKA_CLUSTER_TTL_MS":            "6000",
		"QUEEN_LOG_JSON":                        "true",
		"LOG_LEVEL":                             "error",
		"RUST_LOG":                              "queen_kafka=trace,debug",
		"QUEEN_KAFKA_MAX_CONNECTIONS":           "   ", // blank = unset
		"QUEEN_KAFKA_FETCH_COMPRESSION":         "LZ4",
		"QUEEN_KAFKA_HTTP_ADDR":                 "[::1]:8080",
		"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": " false ",
	} {
		env[k] = v
	}
	c, err := loadEnv(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.QueenURL != "https://queen.example.com" || c.AdvertisedHost != "2001:db8::1" || c.AdvertisedPort != 9093 ||
		c.DefaultPartitions != 12 || c.SASL != "plain" || c.NodeID != 3 || c.Cluster != "eu-1.prod" ||
		c.ClusterTTL != 6*time.Second || c.ClusterHeartbeat != 2*time.Second || !c.LogJSON ||
		c.LogLevel != slog.LevelDebug || c.MaxConnections != 4096 || c.FetchCompression != recordbatch.CodecLz4 ||
		c.HTTPAddr != "[::1]:8080" || c.AutoCreateTopics {
		t.Fatalf("%+v", c)
	}
}

func TestConfigRefusals(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want []string // substrings of the error; the first names the variable
	}{
		{"advertised unset", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": ""}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR is required", "connect to", "not QUEEN_KAFKA_ADDR"}},
		{"advertised blank", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "  "}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR is required"}},
		{"advertised wildcard v4", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "0.0.0.0:9092"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "wildcard", "QUEEN_KAFKA_ADDR"}},
		{"advertised wildcard v6", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "[::]:9092"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "wildcard"}},
		{"advertised bare ::", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "::"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "bare IPv6", "[::]:9092"}},
		{"advertised no port", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka.example.com"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "no port"}},
		{"advertised empty port", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka.example.com:"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "no port"}},
		{"advertised empty host", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": ":9092"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "empty host"}},
		{"advertised port 0", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka:0"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "bad port", "1 to 65535"}},
		{"advertised port 65536", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka:65536"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "bad port"}},
		{"advertised port text", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "kafka:http"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "bad port"}},
		{"advertised bare v6", map[string]string{"QUEEN_KAFKA_ADVERTISED_ADDR": "2001:db8::1:9092"}, []string{"QUEEN_KAFKA_ADVERTISED_ADDR", "bare IPv6", "[2001:db8::1]:9092"}},
		{"queen url scheme", map[string]string{"QUEEN_URL": "ftp://x"}, []string{"QUEEN_URL"}},
		{"queen url garbage", map[string]string{"QUEEN_URL": "not a url"}, []string{"QUEEN_URL"}},
		{"listen addr", map[string]string{"QUEEN_KAFKA_ADDR": "9092"}, []string{"QUEEN_KAFKA_ADDR"}},
		{"listen port", map[string]string{"QUEEN_KAFKA_ADDR": "0.0.0.0:70000"}, []string{"QUEEN_KAFKA_ADDR", "0 to 65535"}},
		// The operator listener's address is checked at boot like the Kafka
		// one, not found wrong when it is bound.
		{"http addr no port", map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "8080"}, []string{"QUEEN_KAFKA_HTTP_ADDR", "host:port"}},
		{"http addr port", map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:65536"}, []string{"QUEEN_KAFKA_HTTP_ADDR", "0 to 65535"}},
		{"http addr bare v6", map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "::1:8080"}, []string{"QUEEN_KAFKA_HTTP_ADDR"}},
		{"partitions 0", map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "0"}, []string{"QUEEN_KAFKA_DEFAULT_PARTITIONS", "1 to 100000"}},
		{"partitions big", map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "100001"}, []string{"QUEEN_KAFKA_DEFAULT_PARTITIONS", "1 to 100000"}},
		{"partitions text", map[string]string{"QUEEN_KAFKA_DEFAULT_PARTITIONS": "many"}, []string{"QUEEN_KAFKA_DEFAULT_PARTITIONS"}},
		{"connections low", map[string]string{"QUEEN_KAFKA_MAX_CONNECTIONS": "15"}, []string{"QUEEN_KAFKA_MAX_CONNECTIONS", "16 to 1000000"}},
		{"connections high", map[string]string{"QUEEN_KAFKA_MAX_CONNECTIONS": "1000001"}, []string{"QUEEN_KAFKA_MAX_CONNECTIONS"}},
		{"join delay", map[string]string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS": "-1"}, []string{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS", "0 to 3600000"}},
		{"min session", map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "0"}, []string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", "1 to 3600000"}},
		{"max session", map[string]string{"QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "3600001"}, []string{"QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS"}},
		{"min above max", map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "10000", "QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "9000"}, []string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", "QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS"}},
		{"share heartbeat not below session", map[string]string{"QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS": "45000"}, []string{"QUEEN_KAFKA_SHARE_GROUP_HEARTBEAT_INTERVAL_MS", "QUEEN_KAFKA_SHARE_GROUP_SESSION_TIMEOUT_MS"}},
		{"share max size", map[string]string{"QUEEN_KAFKA_SHARE_GROUP_MAX_SIZE": "1001"}, []string{"QUEEN_KAFKA_SHARE_GROUP_MAX_SIZE", "1 to 1000"}},
		{"txn bytes", map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "0"}, []string{"QUEEN_KAFKA_TXN_MAX_BYTES"}},
		{"txn records", map[string]string{"QUEEN_KAFKA_TXN_MAX_RECORDS": "x"}, []string{"QUEEN_KAFKA_TXN_MAX_RECORDS"}},
		{"txn staged", map[string]string{"QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "-5"}, []string{"QUEEN_KAFKA_TXN_MAX_STAGED_BYTES"}},
		{"txn open", map[string]string{"QUEEN_KAFKA_TXN_MAX_OPEN": "0"}, []string{"QUEEN_KAFKA_TXN_MAX_OPEN"}},
		{"txn timeout", map[string]string{"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS": "1.5"}, []string{"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS"}},
		{"dedup window negative", map[string]string{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS": "-1"}, []string{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS", "0 to 604800"}},
		{"dedup window above a week", map[string]string{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS": "604801"}, []string{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS", "0 to 604800"}},
		{"dedup keys bool", map[string]string{"QUEEN_KAFKA_DEDUP_KEYS": "yes"}, []string{"QUEEN_KAFKA_DEDUP_KEYS", "true or false"}},
		{"fetch compression brotli", map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "brotli"}, []string{"QUEEN_KAFKA_FETCH_COMPRESSION", "none, gzip, snappy, lz4 or zstd"}},
		{"fetch compression producer", map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "producer"}, []string{"QUEEN_KAFKA_FETCH_COMPRESSION"}},
		{"fetch compression uncompressed", map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "uncompressed"}, []string{"QUEEN_KAFKA_FETCH_COMPRESSION"}},
		{"txn bytes above staged", map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "2000", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "1000"}, []string{"QUEEN_KAFKA_TXN_MAX_BYTES", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES"}},
		{"sasl scram", map[string]string{"QUEEN_KAFKA_SASL": "scram-sha-256"}, []string{"QUEEN_KAFKA_SASL", "plain"}},
		{"auto create bool", map[string]string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": "no"}, []string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true or false"}},
		{"auto create case", map[string]string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": "False"}, []string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true or false"}},
		{"sni bool", map[string]string{"QUEEN_KAFKA_FORWARD_SNI_HOST": "yes"}, []string{"QUEEN_KAFKA_FORWARD_SNI_HOST", "true or false"}},
		{"sni without tls", map[string]string{"QUEEN_KAFKA_FORWARD_SNI_HOST": "true"}, []string{"QUEEN_KAFKA_FORWARD_SNI_HOST", "TLS"}},
		{"cert without key", map[string]string{"QUEEN_KAFKA_TLS_CERT": "/x.pem"}, []string{"QUEEN_KAFKA_TLS_CERT", "QUEEN_KAFKA_TLS_KEY", "both"}},
		{"key without cert", map[string]string{"QUEEN_KAFKA_TLS_KEY": "/x.pem"}, []string{"QUEEN_KAFKA_TLS_KEY", "QUEEN_KAFKA_TLS_CERT", "both"}},
		{"tls missing files", map[string]string{"QUEEN_KAFKA_TLS_CERT": "/nonexistent/c.pem", "QUEEN_KAFKA_TLS_KEY": "/nonexistent/k.pem"}, []string{"QUEEN_KAFKA_TLS_CERT"}},
		{"log level", map[string]string{"LOG_LEVEL": "verbose"}, []string{"LOG_LEVEL", "trace, debug, info, warn, error"}},
		{"rust log wins and is checked", map[string]string{"LOG_LEVEL": "info", "RUST_LOG": "info,foo=loud"}, []string{"RUST_LOG"}},
		{"log directive without target", map[string]string{"LOG_LEVEL": "=debug"}, []string{"LOG_LEVEL"}},
		{"node id 0", map[string]string{"QUEEN_KAFKA_NODE_ID": "0", "QUEEN_TOKEN": "t"}, []string{"QUEEN_KAFKA_NODE_ID", "1 to 64"}},
		{"node id 65", map[string]string{"QUEEN_KAFKA_NODE_ID": "65", "QUEEN_TOKEN": "t"}, []string{"QUEEN_KAFKA_NODE_ID", "1 to 64"}},
		{"cluster without node", map[string]string{"QUEEN_KAFKA_CLUSTER": "prod"}, []string{"QUEEN_KAFKA_CLUSTER", "QUEEN_KAFKA_NODE_ID"}},
		{"cluster name chars", map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "t", "QUEEN_KAFKA_CLUSTER": "a:b"}, []string{"QUEEN_KAFKA_CLUSTER", "[A-Za-z0-9._-]"}},
		{"cluster name long", map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "t", "QUEEN_KAFKA_CLUSTER": strings.Repeat("a", 65)}, []string{"QUEEN_KAFKA_CLUSTER", "1 to 64"}},
		{"heartbeat low", map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "t", "QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": "499"}, []string{"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS", "500 to 30000"}},
		{"ttl high", map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "t", "QUEEN_KAFKA_CLUSTER_TTL_MS": "120001"}, []string{"QUEEN_KAFKA_CLUSTER_TTL_MS", "3000 to 120000"}},
		{"ttl under 3x heartbeat", map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "t", "QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": "2000", "QUEEN_KAFKA_CLUSTER_TTL_MS": "5999"}, []string{"QUEEN_KAFKA_CLUSTER_TTL_MS", "QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS"}},
		{"cluster without token", map[string]string{"QUEEN_KAFKA_NODE_ID": "1"}, []string{"QUEEN_TOKEN", "cluster mode"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := baseEnv()
			for k, v := range tc.env {
				env[k] = v
			}
			_, err := loadEnv(t, env)
			if err == nil {
				t.Fatalf("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the token: %q", err)
			}
		})
	}
}

func TestConfigTLS(t *testing.T) {
	dir := t.TempDir()
	certA, keyA := testsupport.WriteCert(t, dir, "a")
	_, keyB := testsupport.WriteCert(t, dir, "b")

	env := baseEnv()
	env["QUEEN_KAFKA_TLS_CERT"], env["QUEEN_KAFKA_TLS_KEY"], env["QUEEN_KAFKA_FORWARD_SNI_HOST"] = certA, keyA, "true"
	c, err := loadEnv(t, env)
	if err != nil || !c.TLSEnabled() || !c.ForwardSNIHost {
		t.Fatalf("matching pair refused: %v", err)
	}

	env["QUEEN_KAFKA_TLS_KEY"] = keyB // a key that is not the certificate's
	if _, err := loadEnv(t, env); err == nil || !strings.Contains(err.Error(), "QUEEN_KAFKA_TLS_KEY") {
		t.Fatalf("mismatched pair: %v", err)
	}
}

func TestParseLogLevel(t *testing.T) {
	for in, want := range map[string]slog.Level{
		"trace": LevelTrace, "DEBUG": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn,
		"error": slog.LevelError, "info,foo=debug": slog.LevelInfo, "foo=debug,warn": slog.LevelWarn,
		"foo=debug": slog.LevelInfo, "off": levelOff,
	} {
		got, err := ParseLogLevel("LOG_LEVEL", in)
		if err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
}

// The boot line carries every field of "What the boot log says" and says
// whether there is a token, never the token.
func TestBootLine(t *testing.T) {
	env := baseEnv()
	env["QUEEN_TOKEN"] = "s3cr3t-token"
	env["QUEEN_KAFKA_SASL"] = "plain"
	c, err := loadEnv(t, env)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	c.LogBoot(NewLogger(&b, slog.LevelDebug, false))
	out := b.String()
	for _, w := range []string{"queen-kafka starting", "queen_url=http://localhost:6632", "authenticated=true", "listen=0.0.0.0:9092",
		"advertised=kafka.example.com:9092", "default_partitions=1024", "group_join_delay_ms=3000", "tls=false", "sasl=plain",
		"forward_sni_host=false", "auto_create_topics=true", "node_id=0", "cluster=queen", "plaintext listener", "version=" + version.String(), "http=off"} {
		if !strings.Contains(out, w) {
			t.Errorf("boot log lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "s3cr3t") {
		t.Fatalf("boot log leaks the token:\n%s", out)
	}
}

// Neither the boot line nor any log line carrying the Config prints
// QUEEN_TOKEN or a password in QUEEN_URL, in either log format; nor does a
// refused QUEEN_URL's error.
func TestConfigLogRedactsSecrets(t *testing.T) {
	env := baseEnv()
	env["QUEEN_URL"] = "https://svc:hunter2-pass@queen.example.com:6632/"
	env["QUEEN_TOKEN"] = "s3cr3t-token"
	c, err := loadEnv(t, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, json := range []bool{false, true} {
		var b strings.Builder
		log := NewLogger(&b, slog.LevelDebug, json)
		c.LogBoot(log)
		log.Info("config", "config", c)
		log.Info("config", slog.Any("config", c))
		log.With("config", c).Warn("config in a logger's attributes")
		out := b.String()
		if strings.Contains(out, "hunter2") || strings.Contains(out, "s3cr3t") {
			t.Errorf("json=%v: a secret is logged:\n%s", json, out)
		}
		if !strings.Contains(out, "svc:xxxxx@queen.example.com:6632") || strings.Count(out, "authenticated") != 4 {
			t.Errorf("json=%v: want the redacted URL and the token's presence on every line:\n%s", json, out)
		}
	}
	for _, bad := range []string{"ftp://svc:hunter2-pass@queen.example.com", "http://svc:hunter2-pass@queen example.com/", "http://svc:hunter2-pass@[::1"} {
		env["QUEEN_URL"] = bad
		_, err := loadEnv(t, env)
		if err == nil || !strings.Contains(err.Error(), "QUEEN_URL") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestConfigMemoryLimit: QUEEN_KAFKA_MEMORY_LIMIT is auto (0) by default,
// a size in bytes or with a suffix, from 32 MiB to 1 TiB; anything else is
// a boot refusal naming it. GOMEMLIMIT is only recorded: Go applied it.
func TestConfigMemoryLimit(t *testing.T) {
	c, err := loadEnv(t, baseEnv())
	if err != nil || c.MemoryLimit != 0 || c.GoMemLimit != "" {
		t.Fatalf("default: %d %q %v", c.MemoryLimit, c.GoMemLimit, err)
	}
	for raw, want := range map[string]int64{"auto": 0, "460Mi": 460 << 20, "1GiB": 1 << 30, "33554432": 32 << 20, " 1TiB ": 1 << 40} {
		env := baseEnv()
		env["QUEEN_KAFKA_MEMORY_LIMIT"], env["GOMEMLIMIT"] = raw, "400MiB"
		c, err := loadEnv(t, env)
		if err != nil || c.MemoryLimit != want || c.GoMemLimit != "400MiB" {
			t.Errorf("%q: %d %q %v, want %d", raw, c.MemoryLimit, c.GoMemLimit, err, want)
		}
	}
	for _, raw := range []string{"31MiB", "2TiB", "512MB", "lots", "-1", "0", "Auto"} {
		env := baseEnv()
		env["QUEEN_KAFKA_MEMORY_LIMIT"] = raw
		if _, err := loadEnv(t, env); err == nil || !strings.Contains(err.Error(), "QUEEN_KAFKA_MEMORY_LIMIT=") || !strings.Contains(err.Error(), "32MiB to 1TiB") {
			t.Errorf("%q: %v", raw, err)
		}
	}
}
