// Command queen-dev is the project's Queen-compatible development broker
// (not Queen): the HTTP routes of ../shared/queen-api.md over durable
// embedded storage. See package queen/dev for behaviour, storage and fault
// injection, and package supervisor for embedded mode (QUEEN_KAFKA_EMBEDDED),
// in which queen-dev spawns and supervises the facade as its child.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/supervisor"
)

const usage = `queen-dev: Queen-compatible development broker (not Queen).

Usage: queen-dev [-h]

Configuration is by environment only:
  QUEEN_DEV_ADDR        listen address (default 127.0.0.1:6632)
  QUEEN_DEV_DATA        data directory for the write-ahead log (default ./.queen-dev)
  QUEEN_DEV_TOKENS      comma-separated token=tenant[:ro|:wo|:rw|:admin]; turns auth on
                        (unset: no auth, one default tenant)
  QUEEN_DEV_FAULTS      true enables /dev/faults for loopback callers, with an :admin token
                        when QUEEN_DEV_TOKENS is set (default false)
  QUEEN_MAX_BODY_BYTES  request body ceiling in bytes (default 67108864)

Embedded mode (read only when QUEEN_KAFKA_EMBEDDED=true):
  QUEEN_KAFKA_EMBEDDED           true spawns and supervises the facade as a child (default false)
  QUEEN_KAFKA_BIN                the facade binary (default: queen-kafka beside this executable)
  QUEEN_KAFKA_SHUTDOWN_GRACE_MS  SIGTERM to SIGKILL on stop (default 5000, floored at 100)
  The child gets this environment less the broker's secrets, QUEEN_URL set to the
  loopback of the bound listener unless QUEEN_URL is set, and needs
  QUEEN_KAFKA_ADVERTISED_ADDR. GET /status then carries a "kafka" block.

SIGTERM or SIGINT stops the embedded facade (if any), stops accepting, drains in-flight
requests, syncs the log and exits 0.
`

// config is the validated environment.
type config struct {
	addr    string
	dir     string
	tokens  map[string]dev.Token
	faults  bool
	maxBody int64
}

func loadConfig(lookupEnv func(string) (string, bool)) (*config, error) {
	getenv := func(name string) string { v, _ := lookupEnv(name); return v }
	c := &config{addr: "127.0.0.1:6632", dir: "./.queen-dev"}
	if v := strings.TrimSpace(getenv("QUEEN_DEV_ADDR")); v != "" {
		if _, port, err := net.SplitHostPort(v); err != nil {
			return nil, fmt.Errorf("QUEEN_DEV_ADDR: %w", err)
		} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
			return nil, fmt.Errorf("QUEEN_DEV_ADDR: bad port %q", port)
		}
		c.addr = v
	}
	if v, ok := lookupEnv("QUEEN_DEV_DATA"); ok {
		if strings.TrimSpace(v) == "" {
			return nil, errors.New("QUEEN_DEV_DATA: empty (unset it for the default ./.queen-dev)")
		}
		c.dir = v
	}
	if v := strings.TrimSpace(getenv("QUEEN_DEV_TOKENS")); v != "" {
		toks, err := dev.ParseTokens(v)
		if err != nil {
			return nil, fmt.Errorf("QUEEN_DEV_TOKENS: %w", err)
		}
		c.tokens = toks
	}
	if v := strings.TrimSpace(getenv("QUEEN_DEV_FAULTS")); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("QUEEN_DEV_FAULTS: want true or false, got %q", v)
		}
		c.faults = on
	}
	if v := strings.TrimSpace(getenv("QUEEN_MAX_BODY_BYTES")); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("QUEEN_MAX_BODY_BYTES: want a positive integer, got %q", v)
		}
		c.maxBody = n
	}
	return c, nil
}

func main() {
	flag.Usage = func() { fmt.Fprint(flag.CommandLine.Output(), usage) }
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("queen-dev: " + err.Error())
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	cfg, err := loadConfig(os.LookupEnv)
	if err != nil {
		return err
	}
	// Embedded mode is validated with the rest, before anything is bound;
	// off, it reads QUEEN_KAFKA_EMBEDDED and nothing else.
	emb, err := supervisor.Load(context.Background(), os.Environ(), os.Executable)
	if err != nil {
		return err
	}
	var (
		sup    *supervisor.Supervisor
		status func() map[string]any
	)
	if emb != nil {
		sup = supervisor.New(emb, supervisor.Options{Logger: log, BrokerAuth: len(cfg.tokens) > 0})
		// Every way out of run stops the child, a panic in run included
		// (a process that dies any other way takes it along by
		// PR_SET_PDEATHSIG).
		defer sup.Stop()
		status = func() map[string]any { return map[string]any{"kafka": sup.Status()} }
	}
	b, err := dev.New(dev.Options{Dir: cfg.dir, Tokens: cfg.tokens, Faults: cfg.faults, MaxBodyBytes: cfg.maxBody, Logger: log, Status: status})
	if err != nil {
		return fmt.Errorf("QUEEN_DEV_DATA=%s: %w", cfg.dir, err)
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		b.Close()
		return fmt.Errorf("QUEEN_DEV_ADDR=%s: %w", cfg.addr, err)
	}
	srv := b.Server(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	auth := "off"
	if len(cfg.tokens) > 0 {
		auth = "on"
	}
	log.Info("queen-dev listening (development broker, not Queen)", "addr", ln.Addr().String(), "data", cfg.dir,
		"auth", auth, "tenants", b.Tenants(), "faults", cfg.faults, "embedded", emb != nil, "replayed_frames", b.Replay.Frames,
		"torn_bytes", b.Replay.TornBytes)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	if sup != nil {
		// Wired to what ln actually bound, so port 0 and wildcards work.
		sup.Start(ln.Addr())
	}
	select {
	case err := <-serveErr:
		b.Close()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("queen-dev: shutting down")
	if sup != nil {
		// The child stops first, while the broker still serves, so that
		// its own stop (closing its connections; in cluster mode deleting
		// its registry row) still reaches Queen.
		sup.Stop()
	}
	b.Drain() // parked fetches answer now instead of holding Shutdown
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	shutErr := srv.Shutdown(sctx)
	if err := b.Close(); err != nil {
		return fmt.Errorf("close storage: %w", err)
	}
	if shutErr != nil {
		log.Warn("queen-dev: requests still running at shutdown", "err", shutErr)
	}
	log.Info("queen-dev: stopped")
	return nil
}
