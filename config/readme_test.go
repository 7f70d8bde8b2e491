package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite README.md's variable table from the declaration")

const (
	tableBegin = "<!-- variables:begin (generated from config/: go test ./config/ -run TestREADMEVariables -update) -->"
	tableEnd   = "<!-- variables:end -->"
)

// TestREADMEVariables: the README's variable table is the declaration's,
// every variable of every program; -update rewrites it.
func TestREADMEVariables(t *testing.T) {
	path := filepath.Join("..", "docs", "operations.md")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	readme := string(b)
	i, j := strings.Index(readme, tableBegin), strings.Index(readme, tableEnd)
	require.True(t, i >= 0 && j > i, "README.md lacks the markers\n%s\n%s", tableBegin, tableEnd)
	var table strings.Builder
	require.NoError(t, WriteTable(&table))
	want := readme[:i+len(tableBegin)] + "\n" + table.String() + readme[j:]
	if want == readme {
		return
	}
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	t.Errorf("README.md's variable table is not the declaration's: run go test ./config/ -run TestREADMEVariables -update")
}
