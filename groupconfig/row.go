package groupconfig

import (
	"encoding/json"
	"errors"
	"fmt"
)

// rowVersion is the row encoding's version: a row of a newer encoding is
// refused rather than misread.
const rowVersion = 1

// maxRowBytes bounds what decodeRow reads: fourteen configs fit in far
// less, so anything larger is not a row this package wrote.
const maxRowBytes = 16 << 10

type row struct {
	V int               `json:"v"`
	C map[string]string `json:"c"`
}

// encodeRow is the qk:groupcfg: row of overrides.
func encodeRow(overrides map[string]string) []byte {
	b, _ := json.Marshal(row{V: rowVersion, C: overrides}) // a map of strings always marshals
	return b
}

// decodeRow reads a qk:groupcfg: row back into overrides. A name this
// version does not define is kept (a newer node wrote it): Values ignores
// it, and an alter here refuses it by name rather than drop it unseen.
func decodeRow(b []byte) (map[string]string, error) {
	if len(b) > maxRowBytes {
		return nil, fmt.Errorf("group config row of %d bytes", len(b))
	}
	var r row
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("group config row: %w", err)
	}
	if r.V != rowVersion {
		return nil, fmt.Errorf("group config row version %d", r.V)
	}
	if r.C == nil {
		return nil, errors.New("group config row without configs")
	}
	return r.C, nil
}
