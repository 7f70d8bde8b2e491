package operator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"
)

// Check is one readiness condition as /readyz reports it.
type Check struct {
	Name   string
	OK     bool
	Detail string // why it fails, or what it saw
}

// Readiness runs the checks /readyz answers with; ready is all of them OK.
type Readiness func(ctx context.Context) []Check

// readyTimeout bounds one /readyz: a check that has to ask Queen (a probe)
// answers within it or fails.
const readyTimeout = 3 * time.Second

// Handler is the operator mux: metrics at /metrics, liveness at /healthz
// (200 whenever the process serves HTTP at all), readiness at /readyz (200
// when every check passes, else 503; the body lists each check), and
// net/http/pprof under /debug/pprof/.
func Handler(metrics http.Handler, ready Readiness) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		checks := ready(ctx)
		var b strings.Builder
		ok := true
		for _, c := range checks {
			mark := "+"
			if !c.OK {
				mark, ok = "-", false
			}
			fmt.Fprintf(&b, "[%s]%s", mark, c.Name)
			if c.Detail != "" {
				fmt.Fprintf(&b, ": %s", c.Detail)
			}
			b.WriteByte('\n')
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ok {
			b.WriteString("ready\n")
		} else {
			w.WriteHeader(http.StatusServiceUnavailable)
			b.WriteString("not ready\n")
		}
		_, _ = w.Write([]byte(b.String()))
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// Server is the operator listener, bound and serving.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
}

// Listen binds addr and serves h on it until Close.
func Listen(addr string, h http.Handler, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln:   ln,
		done: make(chan struct{}),
		srv: &http.Server{
			Handler: h,
			// A slow or silent peer gives its connection back; no write
			// timeout, because a CPU profile streams for its ?seconds=.
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       time.Minute,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		},
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("operator HTTP listener failed", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting and lets requests in flight finish until ctx ends,
// then closes what is left.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}
