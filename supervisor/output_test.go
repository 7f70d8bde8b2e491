package supervisor

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain line":                         "plain line",
		"\x1b[31mred\x1b[0m":                 "red",
		"\x1b[38;5;196mcolour\x1b[K":         "colour",
		"\x1b]0;window title\x07after":       "after",
		"\x1b]8;;http://x\x1b\\link":         "link",
		"\x1bPdcs payload\x1b\\after":        "after",
		"\x1b(Bcharset":                      "charset",
		"nul\x00bel\x07bs\x08cr\r":           "nulbelbscr",
		"tab\there":                          "tab here",
		"del\x7f":                            "del",
		"c1 \u009b31m csi":                   "c1 31m csi",
		"unterminated \x1b[31":               "unterminated ",
		"bad utf8 \xff\xfe":                  "bad utf8 \ufffd\ufffd",
		"ünïcødé ✓":                          "ünïcødé ✓",
		"trailing escape \x1b":               "trailing escape ",
		"osc unterminated \x1b]0;title":      "osc unterminated ",
		"\x1b[2J\x1b[H\x1b[?25lclear screen": "clear screen",
	} {
		assert.Equal(t, want, clean([]byte(in), false), "%q", in)
	}
	// A truncated line that ends inside a character drops the fragment.
	assert.Equal(t, "ab", clean([]byte("ab\xc3"), true))
	assert.Equal(t, "ab\ufffd", clean([]byte("ab\xc3"), false))
	assert.Equal(t, "a✓", clean([]byte("a✓"), true))
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", maxLineBytes+100)
	exact := strings.Repeat("y", maxLineBytes)
	in := "one\n" + long + "\n" + exact + "\nlast without newline"
	type got struct {
		line      string
		truncated bool
	}
	var lines []got
	readLines(strings.NewReader(in), func(l []byte, tr bool) { lines = append(lines, got{string(l), tr}) })
	assert.Equal(t, []got{
		{"one", false},
		{long[:maxLineBytes], true}, // the rest of that line is dropped
		{exact, false},              // exactly 4 KiB is not truncated
		{"last without newline", false},
	}, lines)
}

// TestBudget: 200 lines per ten second window reach the log; the rest are
// counted, and the count is one "suppressed" line when the window ends,
// even if the child then says nothing more.
func TestBudget(t *testing.T) {
	clk := newFakeClock()
	var logs logBuf
	b := &budget{log: logs.logger(), clock: clk}
	for i := range 1000 {
		b.line("stdout", 42, "line "+strconv.Itoa(i), false)
	}
	require.Len(t, logs.records("queen-kafka"), lineBudget)
	assert.Empty(t, logs.records("queen-kafka output over budget"), "the window is not over yet")
	assert.Equal(t, "line 199", logs.records("queen-kafka")[lineBudget-1]["line"])

	clk.Advance(budgetWindow)
	eventually(t, "the suppressed count at the window's end", func() bool { return len(logs.records("queen-kafka output over budget")) == 1 })
	sup := logs.records("queen-kafka output over budget")[0]
	assert.EqualValues(t, 800, sup["suppressed"])

	// A new window has a new budget, and a flush reports what is pending.
	for i := range 250 {
		b.line("stderr", 42, "again "+strconv.Itoa(i), true)
	}
	assert.Len(t, logs.records("queen-kafka"), 2*lineBudget)
	assert.Equal(t, true, logs.records("queen-kafka")[2*lineBudget-1]["truncated"])
	b.flush()
	all := logs.records("queen-kafka output over budget")
	require.Len(t, all, 2)
	assert.EqualValues(t, 50, all[1]["suppressed"])
	b.flush()
	assert.Len(t, logs.records("queen-kafka output over budget"), 2, "nothing pending, nothing said")

	// The window timer of a window already reported does nothing.
	clk.Advance(time.Hour)
	b.line("stdout", 42, "late", false)
	assert.Len(t, logs.records("queen-kafka output over budget"), 2)
}
