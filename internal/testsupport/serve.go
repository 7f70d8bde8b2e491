package testsupport

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// Serve serves h on a loopback httptest server until t ends, then closes the
// server and only after it calls stop (when not nil): Close waits for the
// requests in flight, so what stop shuts down is no longer in use.
func Serve(t testing.TB, h http.Handler, stop func()) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if stop != nil {
			stop()
		}
	})
	return srv
}
