package dev

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value rendered here is built by this package; failing to
		// encode one is a bug, reported as a server error, not a panic.
		slog.Error("queen-dev: encode response", "err", err)
		writeBody(w, http.StatusInternalServerError, []byte(`{"error":"encode failed"}`))
		return
	}
	writeBody(w, status, body)
}

// writeError answers the broker's generic error body {"error":msg}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func badBody(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadRequest, "bad body: "+msg)
}

// hasControl reports control characters (C0, DEL, C1), refused in names.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return true
		}
	}
	return false
}
