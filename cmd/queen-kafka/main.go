// Command queen-kafka is the Kafka facade: it speaks the Kafka wire protocol
// on QUEEN_KAFKA_ADDR and plain HTTP to Queen at QUEEN_URL.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/config"
	"github.com/queen-mq/queen-kafka/internal/memlimit"
	"github.com/queen-mq/queen-kafka/internal/version"
	"github.com/queen-mq/queen-kafka/node"
)

// shutdownGrace bounds the whole stop after SIGTERM (node.Shutdown keeps
// the release's share of it); it sits inside the supervisor's default 5 s
// grace so a stop finishes before a SIGKILL.
const shutdownGrace = 4 * time.Second

func main() {
	if code, done := flags(os.Args[1:], os.Stdout, os.Stderr); done {
		os.Exit(code)
	}
	os.Exit(run())
}

// flags answers --help and --version; any other argument is refused, since
// the facade is configured by its environment alone. done is false when
// there is nothing to answer and the facade should run.
func flags(args []string, stdout, stderr io.Writer) (code int, done bool) {
	if len(args) == 0 {
		return 0, false
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		if err := config.WriteFacadeHelp(stdout, "queen-kafka"); err != nil {
			return 1, true
		}
		return 0, true
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, "queen-kafka", version.String())
		return 0, true
	}
	fmt.Fprintf(stderr, "queen-kafka: unknown argument %q: the facade is configured by environment variables; see queen-kafka --help\n", args[0])
	return 2, true
}

func run() int {
	// Signals are caught before anything else: a SIGTERM that lands while
	// the facade is still booting (a supervisor stopping a child it just
	// started) waits in sigs for the clean stop instead of killing it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)

	cfg, err := config.LoadFacade(context.Background(), envconfig.OsLookuper())
	if err != nil {
		// One line, naming the variable: a facade that starts on bad
		// configuration does not fail, it lies.
		slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("fatal configuration", "err", err)
		return config.ExitConfig
	}
	log := config.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogJSON)
	slog.SetDefault(log)
	cfg.LogBoot(log)
	setMemoryLimit(cfg, log, "/")

	n, err := node.New(cfg, log)
	if err != nil {
		// Only the configuration can fail it (the Queen URL).
		log.Error("fatal boot", "err", err)
		return config.ExitConfig
	}
	addr, err := n.Listen()
	if err != nil {
		log.Error("fatal boot", "err", err)
		return 1
	}
	log.Info("listening", "addr", addr.String())
	if h := n.HTTPAddr(); h != nil {
		log.Info("operator HTTP listening", "addr", h.String(), "paths", "/metrics /healthz /readyz /debug/pprof/")
	}

	// Cluster mode claims the node id between bind and serve: a port that
	// cannot be bound never takes an id, and no client is answered before
	// this node knows the cluster. The claim may wait out a predecessor's
	// row; a stop during that wait is honoured.
	if code, stop := join(n, log, sigs); stop {
		return code
	}

	served := make(chan error, 1)
	go func() { served <- n.Serve(context.Background()) }()

	code := 0
	select {
	case err := <-served:
		if err == nil {
			return 0
		}
		// Still drained and released: the registry row goes now rather
		// than at its TTL, and the connections served finish.
		log.Error("listener failed", "err", err)
		code = 1
		served = nil
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	case err := <-n.Lost():
		// Another process answers as this node now; serving on would be two
		// brokers with one id. Stop, and say so loudly.
		log.Error("fatal: this node id was taken by another facade process; stopping", "err", err)
		code = 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		log.Warn("shutdown incomplete", "err", err)
	}
	if served != nil {
		<-served
	}
	log.Info("stopped")
	return code
}

// setMemoryLimit sets the Go memory limit from the configuration and the
// container's cgroup under root (package memlimit decides), and logs it.
// A cgroup that cannot be read is a warning, not a fatal boot: the facade
// runs as it would outside a container.
func setMemoryLimit(cfg config.Facade, log *slog.Logger, root string) memlimit.Decision {
	d, err := memlimit.Decide(cfg.GoMemLimit, cfg.MemoryLimit, root)
	if err != nil {
		log.Warn("the container's memory limit could not be read; QUEEN_KAFKA_MEMORY_LIMIT sets one", "err", err)
	}
	limit := memlimit.Apply(d)
	attrs := []any{"from", d.From}
	if limit == memlimit.None {
		attrs = append(attrs, "limit", "none")
	} else {
		attrs = append(attrs, "limit_bytes", limit)
	}
	if d.Container > 0 {
		attrs = append(attrs, "container_bytes", d.Container, "cgroup_file", d.File)
	}
	if d.From == memlimit.FromSetting && d.Container > 0 && d.Limit >= d.Container {
		log.Warn("QUEEN_KAFKA_MEMORY_LIMIT is not below the container's memory limit: the kernel kills the process before the collector works harder", "limit_bytes", cfg.MemoryLimit, "container_bytes", d.Container)
	}
	log.Info("memory limit", attrs...)
	return d
}

// join runs the cluster claim (a no-op in single mode). stop reports that
// the process must exit with code: 1 for a claim that failed (a
// *registry.ConflictError carries the evidence in its message), 0 for a
// signal that arrived while waiting.
func join(n *node.Node, log *slog.Logger, sigs <-chan os.Signal) (code int, stop bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	joined := make(chan error, 1)
	go func() { joined <- n.JoinCluster(ctx) }()
	select {
	case err := <-joined:
		if err != nil {
			log.Error("fatal boot", "err", err)
			return 1, true
		}
		return 0, false
	case sig := <-sigs:
		log.Info("stopped while joining the cluster", "signal", sig.String())
		cancel()
		err := <-joined
		sctx, scancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer scancel()
		// A claim that completed anyway is handed back by Shutdown's release.
		if serr := n.Shutdown(sctx); serr != nil {
			log.Warn("shutdown incomplete", "err", serr)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			log.Warn("cluster claim abandoned", "err", err)
		}
		return 0, true
	}
}
