package registry

import (
	"encoding/json"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/queen-mq/queen-kafka/queen"
)

// Node is one registry row: the value of qk:node:<cluster>:<id> (§10).
type Node struct {
	ID          int32  `json:"nodeId"`
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Incarnation string `json:"incarnation"`
	Since       int64  `json:"since"` // ms since the epoch this incarnation claimed the id
	Version     string `json:"version"`
}

// Addr is the node's advertised host:port.
func (n Node) Addr() string { return net.JoinHostPort(n.Host, strconv.Itoa(n.Port)) }

// sameMember reports whether two rows describe the same member as a client
// sees it; Since and Version alone changing is not a membership change.
func (n Node) sameMember(o Node) bool {
	return n.ID == o.ID && n.Host == o.Host && n.Port == o.Port && n.Incarnation == o.Incarnation
}

// decodeNode reads a row value; ok is false for anything that is not a
// usable node row (malformed JSON, empty host, bad port).
func decodeNode(raw json.RawMessage) (Node, bool) {
	var n Node
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil {
		return Node{}, false
	}
	if n.Host == "" || n.Port < 1 || n.Port > 65535 {
		return n, false
	}
	return n, true
}

// parseRows turns a getPrefix page into nodes. A row whose key is not
// <prefix><id> with id in range, or whose value disagrees with its key, is
// returned in bad rather than trusted: an id that a row does not vouch for
// must never become an owner.
func parseRows(prefix string, rows []queen.KVRow) (nodes []Node, bad []string) {
	for _, r := range rows {
		idText, ok := strings.CutPrefix(r.Key, prefix)
		id, err := strconv.ParseInt(idText, 10, 32)
		if !ok || err != nil || id < MinNodeID || id > MaxNodeID || strconv.FormatInt(id, 10) != idText {
			bad = append(bad, r.Key)
			continue
		}
		n, ok := decodeNode(r.Value)
		if !ok || n.ID != int32(id) {
			bad = append(bad, r.Key)
			continue
		}
		nodes = append(nodes, n)
	}
	slices.SortFunc(nodes, func(a, b Node) int { return int(a.ID) - int(b.ID) })
	return nodes, bad
}

func sameMembers(a, b []Node) bool {
	return slices.EqualFunc(a, b, Node.sameMember)
}
