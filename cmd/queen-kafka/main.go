// Command queen-kafka is the Kafka facade: it speaks the Kafka wire protocol
// on QUEEN_KAFKA_ADDR and plain HTTP to Queen at QUEEN_URL.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sethvargo/go-envconfig"

	"github.com/queen-mq/queen-kafka/node"
)

// shutdownGrace bounds the drain after SIGTERM; it sits inside the
// supervisor's default 5 s grace so a stop finishes before a SIGKILL.
const shutdownGrace = 4 * time.Second

func main() { os.Exit(run()) }

func run() int {
	cfg, err := node.LoadConfig(context.Background(), envconfig.OsLookuper())
	if err != nil {
		// One line, naming the variable: a facade that starts on bad
		// configuration does not fail, it lies.
		slog.New(slog.NewTextHandler(os.Stderr, nil)).Error("fatal configuration", "err", err)
		return 2
	}
	log := node.NewLogger(os.Stderr, cfg.LogLevel, cfg.LogJSON)
	slog.SetDefault(log)
	cfg.LogBoot(log)

	n, err := node.New(cfg, log)
	if err != nil {
		log.Error("fatal boot", "err", err)
		return 2
	}
	addr, err := n.Listen()
	if err != nil {
		log.Error("fatal boot", "err", err)
		return 1
	}
	log.Info("listening", "addr", addr.String())

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	served := make(chan error, 1)
	go func() { served <- n.Serve(context.Background()) }()

	select {
	case err := <-served:
		if err != nil {
			log.Error("listener failed", "err", err)
			return 1
		}
		return 0
	case sig := <-sigs:
		log.Info("shutting down", "signal", sig.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		log.Warn("shutdown incomplete", "err", err)
	}
	<-served
	log.Info("stopped")
	return 0
}
