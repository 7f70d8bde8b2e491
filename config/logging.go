package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// LevelTrace is below slog's Debug, for EnvFilter's "trace".
const LevelTrace = slog.LevelDebug - 4

// levelOff silences everything, for EnvFilter's "off".
const levelOff = slog.LevelError + 4

// ParseLogLevel reads an EnvFilter-like value ("info", or "info,foo=debug")
// into one slog level: the first bare level wins, target directives are
// checked but have no target to apply to here, and a value with no bare
// level means info. Anything unparseable is an error naming variable.
func ParseLogLevel(variable, value string) (slog.Level, error) {
	level, found := slog.LevelInfo, false
	for _, d := range strings.Split(value, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		target, lv, directive := strings.Cut(d, "=")
		if !directive {
			lv = target
		} else if strings.TrimSpace(target) == "" {
			return 0, fmt.Errorf("%s=%q is invalid: directive %q has no target; expected trace, debug, info, warn, error or off, optionally with target=level directives", variable, value, d)
		}
		l, ok := levelByName(lv)
		if !ok {
			return 0, fmt.Errorf("%s=%q is invalid: %q is not a level; expected trace, debug, info, warn, error or off, optionally with target=level directives", variable, value, lv)
		}
		if !directive && !found {
			level, found = l, true
		}
	}
	return level, nil
}

func levelByName(s string) (slog.Level, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "trace":
		return LevelTrace, true
	case "debug":
		return slog.LevelDebug, true
	case "info":
		return slog.LevelInfo, true
	case "warn", "warning":
		return slog.LevelWarn, true
	case "error":
		return slog.LevelError, true
	case "off":
		return levelOff, true
	}
	return 0, false
}

// NewLogger builds the process logger: text by default, JSON with
// QUEEN_LOG_JSON=true.
func NewLogger(w io.Writer, level slog.Level, json bool) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if json {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// LogBoot writes the one boot line an operator compares against what the
// clients use: the Facade's LogValue, which says whether there is a token,
// never the token, and never a password in QUEEN_URL.
func (c Facade) LogBoot(log *slog.Logger) {
	log.LogAttrs(context.Background(), slog.LevelInfo, "queen-kafka starting", c.LogValue().Group()...)
	if c.SASL != "" && !c.TLSEnabled() {
		log.Warn("QUEEN_KAFKA_SASL=plain on a plaintext listener: every client's Queen token crosses the wire in the clear; set QUEEN_KAFKA_TLS_CERT and QUEEN_KAFKA_TLS_KEY unless the link is encrypted underneath this process")
	}
}
