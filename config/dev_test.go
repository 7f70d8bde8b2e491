package config

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sethvargo/go-envconfig"
)

// TestDevCacheSize: QUEEN_DEV_CACHE_SIZE is 64 MiB by default, takes the
// sizes QUEEN_KAFKA_MEMORY_LIMIT takes, and refuses anything else naming
// itself.
func TestDevCacheSize(t *testing.T) {
	load := func(v string) (Dev, error) {
		m := map[string]string{}
		if v != "" {
			m["QUEEN_DEV_CACHE_SIZE"] = v
		}
		return LoadDev(context.Background(), envconfig.MapLookuper(m))
	}
	for raw, want := range map[string]int64{"": 64 << 20, "128MiB": 128 << 20, "1Gi": 1 << 30, "33554432": 32 << 20} {
		c, err := load(raw)
		if err != nil || c.CacheBytes != want {
			t.Errorf("%q: %d %v, want %d", raw, c.CacheBytes, err, want)
		}
	}
	for _, raw := range []string{"1MiB", "lots", "-5", "64MB"} {
		if _, err := load(raw); err == nil || !strings.Contains(err.Error(), "QUEEN_DEV_CACHE_SIZE") {
			t.Errorf("%q accepted or unnamed: %v", raw, err)
		}
	}
}

// TestDevFsync: QUEEN_DEV_FSYNC is a 1 s background fsync by default,
// takes always or a duration from 10ms to 1m, and refuses anything else
// naming itself; QUEEN_DEV_PPROF_ADDR is off unset and must be host:port.
func TestDevFsync(t *testing.T) {
	load := func(m map[string]string) (Dev, error) {
		return LoadDev(context.Background(), envconfig.MapLookuper(m))
	}
	c, err := load(nil)
	if err != nil || c.FsyncAlways || c.FsyncInterval != time.Second || c.PprofAddr != "" {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if c, err = load(map[string]string{"QUEEN_DEV_FSYNC": "always"}); err != nil || !c.FsyncAlways {
		t.Errorf("always: %+v %v", c, err)
	}
	if c, err = load(map[string]string{"QUEEN_DEV_FSYNC": "250ms"}); err != nil || c.FsyncAlways || c.FsyncInterval != 250*time.Millisecond {
		t.Errorf("250ms: %+v %v", c, err)
	}
	for _, raw := range []string{"never", "ALWAYS", "5ms", "2m", "-1s", "1"} {
		if _, err := load(map[string]string{"QUEEN_DEV_FSYNC": raw}); err == nil || !strings.Contains(err.Error(), "QUEEN_DEV_FSYNC") {
			t.Errorf("%q accepted or unnamed: %v", raw, err)
		}
	}
	if c, err = load(map[string]string{"QUEEN_DEV_PPROF_ADDR": "127.0.0.1:6060"}); err != nil || c.PprofAddr != "127.0.0.1:6060" {
		t.Errorf("pprof: %+v %v", c, err)
	}
	if _, err := load(map[string]string{"QUEEN_DEV_PPROF_ADDR": "6060"}); err == nil || !strings.Contains(err.Error(), "QUEEN_DEV_PPROF_ADDR") {
		t.Errorf("bad pprof address accepted or unnamed: %v", err)
	}
}
