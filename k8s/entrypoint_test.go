package k8s

import (
	"bytes"
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// runEntrypoint runs entrypoint.sh under sh with exactly env (plus PATH and
// QK_EXEC=env), so the exported variables come back on stdout.
func runEntrypoint(t *testing.T, env ...string) (vars map[string]string, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("sh", "entrypoint.sh")
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "QK_EXEC=env"}, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("running sh: %v", err)
	}
	vars = map[string]string{}
	for line := range strings.Lines(out.String()) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "="); ok {
			vars[k] = v
		}
	}
	return vars, errb.String(), code
}

func TestEntrypointDerivesNodeIDAndAdvertisedAddr(t *testing.T) {
	for _, tc := range []struct{ pod, id string }{
		{"queen-kafka-0", "1"},
		{"queen-kafka-1", "2"},
		{"queen-kafka-9", "10"},
		{"queen-kafka-63", "64"},
		{"kafka-10", "11"},
	} {
		vars, stderr, code := runEntrypoint(t, "POD_NAME="+tc.pod, "POD_NAMESPACE=streams")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", tc.pod, code, stderr)
		}
		if vars["QUEEN_KAFKA_NODE_ID"] != tc.id {
			t.Errorf("%s: QUEEN_KAFKA_NODE_ID=%q, want %s", tc.pod, vars["QUEEN_KAFKA_NODE_ID"], tc.id)
		}
		want := tc.pod + ".queen-kafka.streams.svc.cluster.local:9092"
		if vars["QUEEN_KAFKA_ADVERTISED_ADDR"] != want {
			t.Errorf("%s: QUEEN_KAFKA_ADVERTISED_ADDR=%q, want %q", tc.pod, vars["QUEEN_KAFKA_ADVERTISED_ADDR"], want)
		}
	}
}

func TestEntrypointHonoursServicePortAndDomain(t *testing.T) {
	vars, stderr, code := runEntrypoint(t, "POD_NAME=qk-2", "POD_NAMESPACE=prod",
		"QK_HEADLESS_SERVICE=qk-peers", "QK_KAFKA_PORT=19092", "QK_CLUSTER_DOMAIN=corp.internal")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := vars["QUEEN_KAFKA_ADVERTISED_ADDR"]; got != "qk-2.qk-peers.prod.svc.corp.internal:19092" {
		t.Errorf("QUEEN_KAFKA_ADVERTISED_ADDR=%q", got)
	}
	if vars["QUEEN_KAFKA_NODE_ID"] != "3" {
		t.Errorf("QUEEN_KAFKA_NODE_ID=%q", vars["QUEEN_KAFKA_NODE_ID"])
	}
}

// Arguments reach the exec'd program unchanged, word boundaries included.
func TestEntrypointPassesArguments(t *testing.T) {
	cmd := exec.Command("sh", "entrypoint.sh", "a b", "c")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "QK_EXEC=echo", "POD_NAME=queen-kafka-0", "POD_NAMESPACE=ns"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v", err)
	}
	if string(out) != "a b c\n" {
		t.Fatalf("arguments reached the program as %q", out)
	}
}

func TestEntrypointRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		why  string
	}{
		{"ordinal 64 is node 65", []string{"POD_NAME=queen-kafka-64", "POD_NAMESPACE=ns"}, "node ids are 1 to 64"},
		{"ordinal 100", []string{"POD_NAME=queen-kafka-100", "POD_NAMESPACE=ns"}, "ordinal"},
		{"leading zero", []string{"POD_NAME=queen-kafka-01", "POD_NAMESPACE=ns"}, "ordinal"},
		{"no ordinal", []string{"POD_NAME=queen-kafka", "POD_NAMESPACE=ns"}, "ordinal"},
		{"garbage", []string{"POD_NAME=hello", "POD_NAMESPACE=ns"}, "<statefulset>-<ordinal>"},
		{"bare number", []string{"POD_NAME=-3", "POD_NAMESPACE=ns"}, "DNS label"},
		{"trailing dash", []string{"POD_NAME=queen-kafka-", "POD_NAMESPACE=ns"}, "DNS label"},
		{"uppercase", []string{"POD_NAME=Queen-0", "POD_NAMESPACE=ns"}, "DNS label"},
		{"shell metacharacters", []string{"POD_NAME=x;rm -rf /-0", "POD_NAMESPACE=ns"}, "DNS label"},
		{"no pod name", []string{"POD_NAMESPACE=ns"}, "POD_NAME is not set"},
		{"no namespace", []string{"POD_NAME=queen-kafka-0"}, "POD_NAMESPACE is not set"},
		{"bad port", []string{"POD_NAME=queen-kafka-0", "POD_NAMESPACE=ns", "QK_KAFKA_PORT=70000"}, "TCP port"},
		{"conflicting node id", []string{"POD_NAME=queen-kafka-0", "POD_NAMESPACE=ns", "QUEEN_KAFKA_NODE_ID=2"}, "remove it"},
	} {
		vars, stderr, code := runEntrypoint(t, tc.env...)
		if code == 0 {
			t.Errorf("%s: accepted, exported %v", tc.name, vars)
			continue
		}
		if _, ran := vars["QUEEN_KAFKA_NODE_ID"]; ran {
			t.Errorf("%s: exec'd the facade despite refusing", tc.name)
		}
		if !strings.Contains(stderr, tc.why) {
			t.Errorf("%s: stderr %q does not say %q", tc.name, stderr, tc.why)
		}
	}
}

func TestEntrypointAcceptsMatchingPresetNodeID(t *testing.T) {
	vars, stderr, code := runEntrypoint(t, "POD_NAME=queen-kafka-2", "POD_NAMESPACE=ns", "QUEEN_KAFKA_NODE_ID=3")
	if code != 0 || vars["QUEEN_KAFKA_NODE_ID"] != "3" {
		t.Fatalf("exit %d, vars %v: %s", code, vars, stderr)
	}
}
