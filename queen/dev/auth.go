package dev

import (
	"fmt"
	"net/http"
	"strings"
)

// Role is a set of access levels (§0.3: roles are sets, not a ladder).
type Role uint8

const (
	RoleRead  Role = 1 << iota // list queues, fetch
	RoleWrite                  // push
	RoleAdmin                  // delete queues

	RoleReadOnly  = RoleRead
	RoleWriteOnly = RoleWrite
	RoleReadWrite = RoleRead | RoleWrite
	RoleAll       = RoleRead | RoleWrite | RoleAdmin
)

// Token is what a bearer token stands for.
type Token struct {
	Tenant string
	Role   Role
}

// ParseTokens reads QUEEN_DEV_TOKENS: comma-separated token=tenant, with an
// optional role suffix :ro (read-only), :wo (write-only), :rw (read-write)
// or :admin (the default: everything, including queue deletion).
func ParseTokens(s string) (map[string]Token, error) {
	out := map[string]Token{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		tok, rest, ok := strings.Cut(item, "=")
		tok = strings.TrimSpace(tok)
		if !ok || tok == "" {
			return nil, fmt.Errorf("entry %d: want token=tenant[:ro|:wo|:rw|:admin]", len(out)+1)
		}
		tenant, suffix, hasRole := strings.Cut(strings.TrimSpace(rest), ":")
		role := RoleAll
		if hasRole {
			switch suffix {
			case "ro":
				role = RoleReadOnly
			case "wo":
				role = RoleWriteOnly
			case "rw":
				role = RoleReadWrite
			case "admin":
				role = RoleAll
			default:
				return nil, fmt.Errorf("entry %d: unknown role %q (want ro, wo, rw or admin)", len(out)+1, suffix)
			}
		}
		if tenant == "" || hasControl(tenant) || hasControl(tok) || strings.ContainsAny(tok, " \t") {
			return nil, fmt.Errorf("entry %d: empty or malformed token or tenant", len(out)+1)
		}
		if _, dup := out[tok]; dup {
			return nil, fmt.Errorf("entry %d: token listed twice", len(out)+1)
		}
		out[tok] = Token{Tenant: tenant, Role: role}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tokens")
	}
	return out, nil
}

// bearer extracts the credential: "Bearer <t>" (prefix case-insensitive) or
// the bare token.
func bearer(r *http.Request) string {
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(h) >= 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return h
}

// authenticate resolves the caller. ok false means the request was answered.
func (b *Broker) authenticate(w http.ResponseWriter, r *http.Request, need Role) (Token, bool) {
	if !b.authOn() {
		return Token{Tenant: DefaultTenant, Role: RoleAll}, true
	}
	tok := bearer(r)
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "Authentication required")
		return Token{}, false
	}
	t, found := b.opts.Tokens[tok]
	if !found {
		writeError(w, http.StatusUnauthorized, "Invalid token signature")
		return Token{}, false
	}
	if t.Role&need != need {
		writeError(w, http.StatusForbidden, "Insufficient permissions")
		return Token{}, false
	}
	return t, true
}

// handleAuthMe answers §9. Auth off: the standalone identity. Auth on: a
// known token gets the same shape naming its tenant as acting cluster (as
// the Cloud gateway does for API-key bearers); anything else 401.
func (b *Broker) handleAuthMe(w http.ResponseWriter, r *http.Request) {
	id, role := DefaultTenant, "admin"
	if b.authOn() {
		t, found := b.opts.Tokens[bearer(r)]
		if !found {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "auth_required", "code": "auth_required"})
			return
		}
		id, role = t.Tenant, roleName(t.Role)
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"user_id":          "standalone",
		"email":            nil,
		"tenant_slug":      id,
		"is_operator":      !b.authOn(),
		"operator_enabled": !b.authOn(),
		"operator_live":    !b.authOn(),
		"acting_cluster":   map[string]string{"id": id, "slug": id},
		"clusters": []map[string]string{{
			"id": id, "slug": id, "role": role, "tenant_slug": id,
			"tenant_id": "00000000-0000-0000-0000-000000000001", "status": "active", "cell_slug": "queen-dev",
		}},
		"act_cluster_header": "x-queen-act-cluster",
		"role":               role,
		"cluster":            nil,
		"standalone":         !b.authOn(),
	})
}

func roleName(r Role) string {
	switch r {
	case RoleReadOnly:
		return "read-only"
	case RoleWriteOnly:
		return "write-only"
	case RoleReadWrite:
		return "read-write"
	}
	return "admin"
}
