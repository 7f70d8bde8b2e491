// Command queen-dev is the project's Queen-compatible development broker
// (not Queen): the HTTP routes of the Queen contract (queen-api.md) over
// durable embedded storage. See package queen/dev for behaviour, storage and fault
// injection, and package supervisor for embedded mode (QUEEN_KAFKA_EMBEDDED),
// in which queen-dev spawns and supervises the facade as its child.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/queen/dev"
	"github.com/queen-mq/queen-kafka/supervisor"
)

// settings is the validated environment: config.Dev, and its token
// table parsed by the broker that owns its syntax.
type settings struct {
	config.Dev
	tokens map[string]dev.Token
}

func loadConfig(l envconfig.Lookuper) (*settings, error) {
	d, err := config.LoadDev(context.Background(), l)
	if err != nil {
		return nil, err
	}
	c := &settings{Dev: d}
	if d.Tokens != "" {
		if c.tokens, err = dev.ParseTokens(d.Tokens); err != nil {
			return nil, fmt.Errorf("QUEEN_DEV_TOKENS: %w", err)
		}
	}
	return c, nil
}

func main() {
	if code, done := flags(flag.CommandLine, os.Args[1:], os.Stdout); done {
		os.Exit(code)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log); err != nil {
		log.Error("queen-dev: " + err.Error())
		os.Exit(1)
	}
}

// flags answers -h and --version (also -version and version, as
// queen-kafka does); any other argument is refused with the usage, since
// queen-dev is configured by its environment alone. done is false when
// there is nothing to answer and queen-dev should run.
func flags(fs *flag.FlagSet, args []string, stdout io.Writer) (code int, done bool) {
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.Usage = func() { config.WriteDevHelp(fs.Output(), "queen-dev") }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	if *showVersion || fs.NArg() == 1 && fs.Arg(0) == "version" {
		fmt.Fprintln(stdout, "queen-dev", version.String())
		return 0, true
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return 2, true
	}
	return 0, false
}

func run(log *slog.Logger) error {
	cfg, err := loadConfig(envconfig.OsLookuper())
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
	b, err := dev.New(dev.Options{Dir: cfg.Data, CacheBytes: cfg.CacheBytes, FsyncAlways: cfg.FsyncAlways, FsyncInterval: cfg.FsyncInterval,
		Tokens: cfg.tokens, Faults: cfg.Faults, MaxBodyBytes: cfg.MaxBodyBytes, Logger: log, Status: status})
	if err != nil {
		return fmt.Errorf("QUEEN_DEV_DATA=%s: %w", cfg.Data, err)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		b.Close()
		return fmt.Errorf("QUEEN_DEV_ADDR=%s: %w", cfg.Addr, err)
	}
	if cfg.PprofAddr != "" {
		pln, err := net.Listen("tcp", cfg.PprofAddr)
		if err != nil {
			ln.Close()
			b.Close()
			return fmt.Errorf("QUEEN_DEV_PPROF_ADDR=%s: %w", cfg.PprofAddr, err)
		}
		go servePprof(pln, log)
	}
	srv := b.Server(slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	auth := "off"
	if len(cfg.tokens) > 0 {
		auth = "on"
	}
	fsync := cfg.FsyncInterval.String()
	if cfg.FsyncAlways {
		fsync = "always"
	}
	log.Info("queen-dev listening (development broker, not Queen)", "addr", ln.Addr().String(), "data", cfg.Data, "fsync", fsync,
		"auth", auth, "tenants", b.Tenants(), "faults", cfg.Faults, "embedded", emb != nil, "queues", b.Boot.Queues,
		"partitions", b.Boot.Partitions, "boot_ms", b.Boot.Took.Milliseconds())

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

// servePprof serves Go's profiles on ln (QUEEN_DEV_PPROF_ADDR), apart from
// the broker's listener, until the process exits.
func servePprof(ln net.Listener, log *slog.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	log.Info("queen-dev: profiles served", "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		log.Warn("queen-dev: profile listener stopped", "err", err)
	}
}
