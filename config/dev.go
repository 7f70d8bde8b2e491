package config

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/internal/memlimit"
)

// Dev is queen-dev's own broker configuration, validated but for the
// token table, whose syntax is queen/dev's (dev.ParseTokens).
type Dev struct {
	Addr         string // QUEEN_DEV_ADDR
	Data         string // QUEEN_DEV_DATA
	Tokens       string // QUEEN_DEV_TOKENS as given; "" is auth off
	Faults       bool   // QUEEN_DEV_FAULTS
	MaxBodyBytes int64  // QUEEN_MAX_BODY_BYTES
	CacheBytes   int64  // QUEEN_DEV_CACHE_SIZE
	// QUEEN_DEV_FSYNC: always (FsyncAlways), or the period of the
	// background fsync (FsyncInterval).
	FsyncAlways   bool
	FsyncInterval time.Duration
	PprofAddr     string // QUEEN_DEV_PPROF_ADDR; "" is off
}

// LoadDev reads queen-dev's own variables through l; the error names the
// variable at fault.
func LoadDev(ctx context.Context, l envconfig.Lookuper) (Dev, error) {
	raw, env, err := read(ctx, l, DevMode)
	if err != nil {
		return Dev{}, err
	}
	c := Dev{Addr: raw.DevAddr, Data: raw.DevData, Tokens: raw.DevTokens, PprofAddr: raw.DevPprof}
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		return Dev{}, fmt.Errorf("QUEEN_DEV_ADDR: %w", err)
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return Dev{}, fmt.Errorf("QUEEN_DEV_ADDR: bad port %q", port)
	}
	// Blank is refused here, not defaulted: the message says how to get
	// the default.
	if env.blank["QUEEN_DEV_DATA"] {
		return Dev{}, errors.New("QUEEN_DEV_DATA: empty (unset it for the default ./.queen-dev)")
	}
	if c.Faults, err = strconv.ParseBool(raw.DevFaults); err != nil {
		return Dev{}, devRefusal("DevFaults", raw.DevFaults)
	}
	if c.MaxBodyBytes, err = strconv.ParseInt(raw.DevMaxBody, 10, 64); err != nil || c.MaxBodyBytes <= 0 {
		return Dev{}, devRefusal("DevMaxBody", raw.DevMaxBody)
	}
	if c.CacheBytes, err = memlimit.ParseSize(raw.DevCache); err != nil {
		return Dev{}, devRefusal("DevCache", raw.DevCache)
	}
	if raw.DevFsync == "always" {
		c.FsyncAlways = true
	} else if c.FsyncInterval, err = time.ParseDuration(raw.DevFsync); err != nil ||
		c.FsyncInterval < 10*time.Millisecond || c.FsyncInterval > time.Minute {
		return Dev{}, devRefusal("DevFsync", raw.DevFsync)
	}
	if c.PprofAddr != "" {
		if _, _, err := net.SplitHostPort(c.PprofAddr); err != nil {
			return Dev{}, fmt.Errorf("QUEEN_DEV_PPROF_ADDR: %w", err)
		}
	}
	return c, nil
}

// devRefusal is queen-dev's message for a value its variable does not
// accept.
func devRefusal(field, raw string) error {
	v := variable(field)
	return fmt.Errorf("%s: want %s, got %q", v.Name, v.Accepts, raw)
}
