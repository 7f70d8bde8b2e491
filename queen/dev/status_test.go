package dev

import (
	"net/http"
	"testing"
)

func TestStatus(t *testing.T) {
	e := newEnv(t, Options{})
	st, raw, _ := e.do(http.MethodGet, "/status", "", "")
	if st != 200 || string(raw) != `{"status":"ok"}` {
		t.Errorf("status without blocks: %d %s", st, raw)
	}
	st, raw, _ = e.do(http.MethodPost, "/status", "", "")
	if v := wantStatus(t, st, raw, 405); field(v, "error") == nil {
		t.Errorf("POST /status: %s", raw)
	}

	e = newEnv(t, Options{Tokens: map[string]Token{"tok": {Tenant: "t", Role: RoleAdmin}},
		Status: func() map[string]any {
			return map[string]any{"kafka": map[string]any{"phase": "running"}, "status": "overridden"}
		}})
	st, raw, _ = e.do(http.MethodGet, "/status", "", "") // no bearer: /status is open, like /health
	if st != 200 || string(raw) != `{"kafka":{"phase":"running"},"status":"ok"}` {
		t.Errorf("status with a block: %d %s", st, raw)
	}
}
