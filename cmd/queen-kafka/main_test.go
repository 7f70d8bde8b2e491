package main

import (
	"testing"

	"github.com/queen-mq/queen-kafka/config"
)

// TestBadConfigurationExitsExitConfig: a configuration refused at boot
// exits config.ExitConfig, the status embedded mode's supervisor does not
// restart (not 2, which a Go panic exits with).
func TestBadConfigurationExitsExitConfig(t *testing.T) {
	t.Setenv("QUEEN_KAFKA_LOG_LEVEL", "loud")
	if code := run(); code != config.ExitConfig {
		t.Fatalf("exit %d, want %d", code, config.ExitConfig)
	}
}
