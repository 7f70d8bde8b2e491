package config

import (
	"context"
	"strings"
	"testing"

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
