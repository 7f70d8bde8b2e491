package main

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/queen-mq/queen-kafka/config"
)

// TestBadConfigurationExitsExitConfig: a configuration refused at boot
// exits config.ExitConfig, the status embedded mode's supervisor does not
// restart (not 2, which a Go panic exits with).
func TestBadConfigurationExitsExitConfig(t *testing.T) {
	t.Setenv("QUEEN_KAFKA_ADVERTISED_ADDR", "localhost:9092")
	t.Setenv("QUEEN_KAFKA_MEMORY_LIMIT", "lots")
	if code := run(); code != config.ExitConfig {
		t.Fatalf("exit %d, want %d", code, config.ExitConfig)
	}
}

// TestBootSetsTheMemoryLimit: boot sets the Go memory limit to 90% of the
// container's (a fake cgroup v2 tree) and logs it; QUEEN_KAFKA_MEMORY_LIMIT
// sets it exactly; a set GOMEMLIMIT is left alone.
func TestBootSetsTheMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	root := t.TempDir()
	cg := filepath.Join(root, "sys", "fs", "cgroup")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"cgroup.controllers": "memory\n", "memory.max": "536870912\n"} {
		if err := os.WriteFile(filepath.Join(cg, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))

	setMemoryLimit(config.Facade{}, log, root)
	if got := debug.SetMemoryLimit(-1); got != 536870912/100*90 {
		t.Fatalf("limit %d, want 90%% of 512 MiB", got)
	}
	if !strings.Contains(out.String(), `msg="memory limit" from=container limit_bytes=483183810 container_bytes=536870912`) {
		t.Errorf("boot line: %s", out.String())
	}

	setMemoryLimit(config.Facade{MemoryLimit: 300 << 20}, log, root)
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("limit %d, want QUEEN_KAFKA_MEMORY_LIMIT's", got)
	}

	debug.SetMemoryLimit(400 << 20) // as the runtime applied GOMEMLIMIT=400MiB
	out.Reset()
	setMemoryLimit(config.Facade{MemoryLimit: 300 << 20, GoMemLimit: "400MiB"}, log, root)
	if got := debug.SetMemoryLimit(-1); got != 400<<20 {
		t.Fatalf("limit %d, want GOMEMLIMIT's", got)
	}
	if !strings.Contains(out.String(), "from=GOMEMLIMIT limit_bytes=419430400") {
		t.Errorf("boot line: %s", out.String())
	}
}
