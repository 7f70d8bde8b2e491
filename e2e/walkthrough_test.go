package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/queen-mq/queen-kafka/internal/testsupport"
)

// The README's walkthrough ("Try it") is run as a newcomer runs it: its
// start command (make run, on a fresh data directory), then each command
// block in order, each output compared with the block the README shows
// after it. The blocks are found by HTML comments just above their fences:
//
//	<!-- walkthrough:start -->          the command that starts make run (once, first)
//	<!-- walkthrough:step -->           a command block, run to completion with bash -e -o pipefail
//	<!-- walkthrough:output [mode] -->  what the block above prints on stdout
//
// An output's mode is empty (exactly these lines, in this order),
// any-order (exactly these lines, in any order: records of different
// partitions), or excerpt (these lines appear among the output, in this
// order: make run's banner, which names a fresh directory). A step without
// an output block must print nothing.
//
// Two substitutions, and no other: make run is `make build` then
// scripts/run.sh, so the start command runs the script on the binaries
// TestMain built (BIN); and the README's ports (queen-dev's 6632, Kafka's
// 9092-9094, the operator's 8080-8082) become free ones given through the
// script's variables, in commands and outputs alike, so that the test
// never meets a `make run` someone else left running. TMPDIR is the test's,
// so the fresh data directory of mktemp -d is removed with it. The whole
// walkthrough runs twice: as written (three facades), and with NODES=1
// (one facade embedded in queen-dev), whose outputs must be the same but
// for the bootstrap line, which names its one node.

// walkStep is one marked command block and the output shown after it.
type walkStep struct {
	line      int // of the command's marker in README.md
	command   string
	hasOutput bool
	mode      string // "", "any-order" or "excerpt"
	output    string
}

var walkMarker = regexp.MustCompile(`^<!-- walkthrough:(start|step|output)(?: ([a-z-]+))? -->$`)

// parseWalkthrough reads the marked blocks of a README: the start command
// first, then the steps.
func parseWalkthrough(text string) ([]walkStep, error) {
	lines := strings.Split(text, "\n")
	var steps []walkStep
	for i := 0; i < len(lines); i++ {
		m := walkMarker.FindStringSubmatch(strings.TrimSpace(lines[i]))
		if m == nil {
			if strings.Contains(lines[i], "walkthrough:") && strings.Contains(lines[i], "<!--") {
				return nil, fmt.Errorf("README.md:%d: a walkthrough marker this test does not know: %q", i+1, lines[i])
			}
			continue
		}
		at := i + 1
		// The fenced block right after the marker (blank lines between
		// are allowed).
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || !strings.HasPrefix(lines[j], "```") {
			return nil, fmt.Errorf("README.md:%d: marker %s is not followed by a fenced block", at, m[1])
		}
		k := j + 1
		for k < len(lines) && !strings.HasPrefix(lines[k], "```") {
			k++
		}
		if k == len(lines) {
			return nil, fmt.Errorf("README.md:%d: unterminated block", j+1)
		}
		body := strings.Join(lines[j+1:k], "\n")
		i = k
		switch m[1] {
		case "start", "step":
			if m[2] != "" {
				return nil, fmt.Errorf("README.md:%d: %s takes no mode", at, m[1])
			}
			if (m[1] == "start") != (len(steps) == 0) {
				return nil, fmt.Errorf("README.md:%d: the walkthrough has one start marker, before every step", at)
			}
			steps = append(steps, walkStep{line: at, command: body})
		case "output":
			if !slices.Contains([]string{"", "any-order", "excerpt"}, m[2]) {
				return nil, fmt.Errorf("README.md:%d: output mode %q is not one of any-order, excerpt", at, m[2])
			}
			if len(steps) == 0 || steps[len(steps)-1].hasOutput {
				return nil, fmt.Errorf("README.md:%d: an output block follows no command block of its own", at)
			}
			s := &steps[len(steps)-1]
			s.hasOutput, s.mode, s.output = true, m[2], body
		}
	}
	if len(steps) < 2 {
		return nil, fmt.Errorf("README.md has %d marked walkthrough blocks, want a start and at least one step", len(steps))
	}
	return steps, nil
}

// outputMatches says whether got (a command's stdout) is what want shows,
// under mode.
func outputMatches(mode, want, got string) bool {
	split := func(s string) []string {
		s = strings.TrimRight(s, "\n")
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	w, g := split(want), split(got)
	switch mode {
	case "any-order":
		slices.Sort(w)
		slices.Sort(g)
		return slices.Equal(w, g)
	case "excerpt":
		for _, l := range g {
			if len(w) > 0 && l == w[0] {
				w = w[1:]
			}
		}
		return len(w) == 0
	default:
		return slices.Equal(w, g)
	}
}

func TestParseWalkthrough(t *testing.T) {
	good := "intro\n<!-- walkthrough:start -->\n```bash\nmake run\n```\n\n<!-- walkthrough:output excerpt -->\n\n```text\nx\n```\n" +
		"<!-- walkthrough:step -->\n```bash\na\nb\n```\n<!-- walkthrough:step -->\n```bash\nc\n```\n<!-- walkthrough:output any-order -->\n```text\n1\n2\n```\n"
	steps, err := parseWalkthrough(good)
	if err != nil {
		t.Fatal(err)
	}
	want := []walkStep{
		{line: 2, command: "make run", hasOutput: true, mode: "excerpt", output: "x"},
		{line: 12, command: "a\nb"},
		{line: 17, command: "c", hasOutput: true, mode: "any-order", output: "1\n2"},
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("parsed %+v, want %+v", steps, want)
	}
	for name, bad := range map[string]string{
		"no start":           "<!-- walkthrough:step -->\n```bash\na\n```\n<!-- walkthrough:step -->\n```bash\nb\n```\n",
		"two starts":         "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:start -->\n```bash\nb\n```\n",
		"no fence":           "<!-- walkthrough:start -->\nmake run\n",
		"unterminated":       "<!-- walkthrough:start -->\n```bash\nmake run\n",
		"unknown mode":       "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:output sorted -->\n```text\nb\n```\n",
		"unknown marker":     "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:run -->\n```bash\nb\n```\n",
		"orphan output":      "<!-- walkthrough:output -->\n```text\na\n```\n",
		"two outputs":        "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:output -->\n```text\nb\n```\n<!-- walkthrough:output -->\n```text\nc\n```\n",
		"start alone":        "<!-- walkthrough:start -->\n```bash\na\n```\n",
		"mode on a step":     "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:step any-order -->\n```bash\nb\n```\n",
		"nothing marked":     "# README\n",
		"marker inside text": "<!-- walkthrough:start -->\n```bash\na\n```\n<!-- walkthrough:step -->\n```bash\nb\n```\n<!--walkthrough:step-->\n",
	} {
		if _, err := parseWalkthrough(bad); err == nil {
			t.Errorf("%s: parsed without an error", name)
		}
	}
}

func TestOutputMatches(t *testing.T) {
	for _, c := range []struct {
		mode, want, got string
		ok              bool
	}{
		{"", "a\nb", "a\nb\n", true},
		{"", "a\nb", "b\na\n", false},
		{"", "a\nb", "a\nb\nc\n", false},
		{"", "", "", true},
		{"", "", "x\n", false},
		{"any-order", "a\nb", "b\na\n", true},
		{"any-order", "a\nb", "a\na\n", false},
		{"any-order", "a\nb", "a\nb\nb\n", false},
		{"excerpt", "b\nd", "a\nb\nc\nd\n", true},
		{"excerpt", "b\nd", "a\nd\nc\nb\n", false},
		{"excerpt", "b", "a\nbb\n", false},
	} {
		if got := outputMatches(c.mode, c.want, c.got); got != c.ok {
			t.Errorf("outputMatches(%q, %q, %q) = %v, want %v", c.mode, c.want, c.got, got, c.ok)
		}
	}
}

// TestREADMEWalkthrough runs the README's walkthrough against make run's
// processes and compares every output with the README's.
func TestREADMEWalkthrough(t *testing.T) {
	for _, tool := range []string{"kcat", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the walkthrough needs %s (apt-get install -y %s): %v", tool, tool, err)
		}
	}
	script := scriptPath(t)
	root := filepath.Dir(filepath.Dir(script))
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := parseWalkthrough(string(text))
	if err != nil {
		t.Fatal(err)
	}

	// The README's make run, with its defaults (NODES unset: three
	// facades); and NODES=1, the README's other way to start, which must
	// answer every step the same, its bootstrap line naming its one node.
	for _, nodes := range []int{0, 1} {
		name := "README"
		if nodes > 0 {
			name = "NODES=" + strconv.Itoa(nodes)
		}
		t.Run(name, func(t *testing.T) { walkthrough(t, script, steps, nodes) })
	}
}

func walkthrough(t *testing.T, script string, steps []walkStep, nodes int) {
	ports := freeRunPorts(t)
	var pairs []string
	for i := range 3 {
		pairs = append(pairs,
			":"+strconv.Itoa(9092+i), ":"+strconv.Itoa(ports.kafka+i),
			":"+strconv.Itoa(8080+i), ":"+strconv.Itoa(ports.http+i))
	}
	pairs = append(pairs, ":6632", ":"+strconv.Itoa(ports.dev))
	moved := strings.NewReplacer(pairs...).Replace

	start := steps[0]
	if strings.Count(start.command, "make run") != 1 {
		t.Fatalf("README.md:%d: the start command %q does not run make run once", start.line, start.command)
	}
	line := strings.Replace(moved(start.command), "make run", shellQuote(script), 1)
	tmp := t.TempDir()
	// Only the ports and the binaries' folder are the test's (and NODES).
	j := startRun(t, line, ports.env(nodes, "TMPDIR="+tmp))
	banner := j.banner(t, 90*time.Second)
	want := moved(start.output)
	if nodes == 1 {
		want = firstServer(want)
	}
	if start.hasOutput && !outputMatches(start.mode, want, banner) {
		t.Fatalf("README.md:%d: make run printed\n%s\nwhich does not show (%s)\n%s", start.line, banner, modeName(start.mode), want)
	}

	for _, s := range steps[1:] {
		cmdText := moved(s.command)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", cmdText)
		cmd.Env = append(testsupport.BaseEnv(), "TMPDIR="+tmp)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d: %v\n%s\nstdout:\n%s\nstderr:\n%s", s.line, err, cmdText, stdout.String(), stderr.String())
		}
		if !outputMatches(s.mode, moved(s.output), stdout.String()) {
			t.Errorf("README.md:%d:\n%s\nprinted\n%s\nwhich is not (%s)\n%s", s.line, cmdText, stdout.String(), modeName(s.mode), moved(s.output))
		}
	}

	if code := j.ctrlC(t, 60*time.Second); code != 0 {
		t.Errorf("Ctrl-C: make run exited %d, want 0", code)
	}
}

// firstServer cuts every bootstrap.servers line of s to its first address:
// what make run prints with one node.
func firstServer(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "bootstrap.servers=") {
			lines[i], _, _ = strings.Cut(l, ",")
		}
	}
	return strings.Join(lines, "\n")
}

func modeName(mode string) string {
	if mode == "" {
		return "exactly, in order"
	}
	return mode
}
