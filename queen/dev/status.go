package dev

import "net/http"

// handleStatus is GET /status, queen-dev's own route (not part of the
// contract, like /health): {"status":"ok"} plus the blocks Options.Status
// adds. It is unauthenticated, as /health is: what it shows is the
// process's own state, never a tenant's.
func (b *Broker) handleStatus(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{}
	if b.opts.Status != nil {
		for k, v := range b.opts.Status() {
			body[k] = v
		}
	}
	body["status"] = "ok"
	writeJSON(w, http.StatusOK, body)
}
