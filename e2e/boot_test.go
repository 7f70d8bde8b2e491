package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestBootValidation: every configuration the operator page refuses is a
// non-zero exit before the listener binds, with a message that names the
// variable. The base environment boots (the shared facade is the proof);
// each case changes one thing. Validation happens before any call to Queen,
// so QUEEN_URL points at a closed port.
func TestBootValidation(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	base := func(over map[string]string) map[string]string {
		return facadeEnv("http://127.0.0.1:1", addr, over)
	}
	cluster := func(over map[string]string) map[string]string {
		m := map[string]string{"QUEEN_KAFKA_NODE_ID": "1", "QUEEN_TOKEN": "e2e-token"}
		for k, v := range over {
			m[k] = v
		}
		return base(m)
	}
	// A cert/key pair on disk, so the half-pair case is about the pair and
	// not about a missing file.
	dir := t.TempDir()
	cert := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, []byte("-----BEGIN CERTIFICATE-----\nMA==\n-----END CERTIFICATE-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	const adv = "QUEEN_KAFKA_ADVERTISED_ADDR"
	cases := []struct {
		name    string
		env     map[string]string
		mention []string
	}{
		{"advertised unset", base(map[string]string{adv: ""}), []string{adv, "QUEEN_KAFKA_ADDR"}},
		{"advertised blank", base(map[string]string{adv: "   "}), []string{adv}},
		{"advertised wildcard v4", base(map[string]string{adv: "0.0.0.0:9092"}), []string{adv}},
		{"advertised wildcard v6", base(map[string]string{adv: "[::]:9092"}), []string{adv}},
		{"advertised no port", base(map[string]string{adv: "kafka.example.com"}), []string{adv}},
		{"advertised empty host", base(map[string]string{adv: ":9092"}), []string{adv}},
		{"advertised port not a number", base(map[string]string{adv: "kafka.example.com:http"}), []string{adv}},
		{"advertised port out of range", base(map[string]string{adv: "kafka.example.com:65536"}), []string{adv}},
		{"advertised bare IPv6", base(map[string]string{adv: "fe80::1:9092"}), []string{adv, "["}},
		{"listen address", base(map[string]string{"QUEEN_KAFKA_ADDR": "nonsense"}), []string{"QUEEN_KAFKA_ADDR"}},
		{"operator address", base(map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "nonsense"}), []string{"QUEEN_KAFKA_HTTP_ADDR"}},
		{"operator port out of range", base(map[string]string{"QUEEN_KAFKA_HTTP_ADDR": "127.0.0.1:70000"}), []string{"QUEEN_KAFKA_HTTP_ADDR"}},
		{"queen url scheme", base(map[string]string{"QUEEN_URL": "ftp://queen:6632"}), []string{"QUEEN_URL"}},
		{"tls cert without key", base(map[string]string{"QUEEN_KAFKA_TLS_CERT": cert}), []string{"QUEEN_KAFKA_TLS_"}},
		{"tls key without cert", base(map[string]string{"QUEEN_KAFKA_TLS_KEY": cert}), []string{"QUEEN_KAFKA_TLS_"}},
		{"sasl bad value", base(map[string]string{"QUEEN_KAFKA_SASL": "scram-sha-256"}), []string{"QUEEN_KAFKA_SASL"}},
		{"forward sni not a bool", base(map[string]string{"QUEEN_KAFKA_FORWARD_SNI_HOST": "maybe"}), []string{"QUEEN_KAFKA_FORWARD_SNI_HOST"}},
		{"dedup keys not a bool", base(map[string]string{"QUEEN_KAFKA_DEDUP_KEYS": "off"}), []string{"QUEEN_KAFKA_DEDUP_KEYS"}},
		{"auto create not a bool", base(map[string]string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE": "yes"}), []string{"QUEEN_KAFKA_AUTO_CREATE_TOPICS_ENABLE", "true or false"}},
		{"fetch compression unknown", base(map[string]string{"QUEEN_KAFKA_FETCH_COMPRESSION": "brotli"}), []string{"QUEEN_KAFKA_FETCH_COMPRESSION", "none, gzip, snappy, lz4 or zstd"}},
		{"forward sni without tls", base(map[string]string{"QUEEN_KAFKA_FORWARD_SNI_HOST": "true"}), []string{"QUEEN_KAFKA_FORWARD_SNI_HOST"}},
		{"session min above max", base(map[string]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS": "20000", "QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS": "10000"}),
			[]string{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", "QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS"}},
		{"txn bytes above staged budget", base(map[string]string{"QUEEN_KAFKA_TXN_MAX_BYTES": "2000000", "QUEEN_KAFKA_TXN_MAX_STAGED_BYTES": "1000000"}),
			[]string{"QUEEN_KAFKA_TXN_MAX_BYTES"}},
		{"node id zero", cluster(map[string]string{"QUEEN_KAFKA_NODE_ID": "0"}), []string{"QUEEN_KAFKA_NODE_ID"}},
		{"node id 65", cluster(map[string]string{"QUEEN_KAFKA_NODE_ID": "65"}), []string{"QUEEN_KAFKA_NODE_ID"}},
		{"node id not a number", cluster(map[string]string{"QUEEN_KAFKA_NODE_ID": "one"}), []string{"QUEEN_KAFKA_NODE_ID"}},
		{"cluster without node id", base(map[string]string{"QUEEN_KAFKA_CLUSTER": "queen"}), []string{"QUEEN_KAFKA_CLUSTER", "QUEEN_KAFKA_NODE_ID"}},
		{"cluster name charset", cluster(map[string]string{"QUEEN_KAFKA_CLUSTER": "my cluster"}), []string{"QUEEN_KAFKA_CLUSTER"}},
		{"cluster ttl under 3x heartbeat", cluster(map[string]string{"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS": "2000", "QUEEN_KAFKA_CLUSTER_TTL_MS": "5000"}),
			[]string{"QUEEN_KAFKA_CLUSTER_TTL_MS"}},
		{"cluster without token", cluster(map[string]string{"QUEEN_TOKEN": ""}), []string{"QUEEN_TOKEN"}},
	}
	// Every numeric variable: not a number, and each side of its range.
	numeric := []struct {
		name     string
		env      func(map[string]string) map[string]string
		low, hig string
	}{
		{"QUEEN_KAFKA_DEFAULT_PARTITIONS", base, "0", "100001"},
		{"QUEEN_KAFKA_MAX_CONNECTIONS", base, "15", "1000001"},
		{"QUEEN_KAFKA_GROUP_JOIN_DELAY_MS", base, "-1", "3600001"},
		{"QUEEN_KAFKA_GROUP_MIN_SESSION_TIMEOUT_MS", base, "0", "3600001"},
		{"QUEEN_KAFKA_GROUP_MAX_SESSION_TIMEOUT_MS", base, "0", "3600001"},
		{"QUEEN_KAFKA_TXN_MAX_BYTES", base, "-1", ""},
		{"QUEEN_KAFKA_TXN_MAX_RECORDS", base, "-1", ""},
		{"QUEEN_KAFKA_TXN_MAX_STAGED_BYTES", base, "-1", ""},
		{"QUEEN_KAFKA_TXN_MAX_OPEN", base, "-1", ""},
		{"QUEEN_KAFKA_TXN_MAX_TIMEOUT_MS", base, "-1", ""},
		{"QUEEN_KAFKA_DEDUP_WINDOW_SECONDS", base, "-1", "604801"},
		{"QUEEN_KAFKA_CLUSTER_HEARTBEAT_MS", func(m map[string]string) map[string]string {
			m["QUEEN_KAFKA_CLUSTER_TTL_MS"] = "120000" // so only the heartbeat's own range is broken
			return cluster(m)
		}, "499", "30001"},
		{"QUEEN_KAFKA_CLUSTER_TTL_MS", cluster, "2999", "120001"},
	}
	for _, n := range numeric {
		for _, v := range []string{"abc", "1.5", n.low, n.hig} {
			if v == "" {
				continue
			}
			cases = append(cases, struct {
				name    string
				env     map[string]string
				mention []string
			}{n.name + "=" + v, n.env(map[string]string{n.name: v}), []string{n.name}})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bootFailure(t, c.env, c.mention...)
		})
	}
}
