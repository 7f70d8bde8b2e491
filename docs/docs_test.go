package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository, seen from this package's folder.
const root = ".."

// pages are the documents checked: the README, every page here, and the
// Kubernetes folder's.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "k8s/README.md"}
	for _, d := range docs {
		out = append(out, "docs/"+d)
	}
	return out
}

// read is a repository file's text.
func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// exists says whether the repository holds name (slash-separated, relative
// to the repository's root), a file or a folder.
func exists(name string) bool {
	_, err := os.Stat(filepath.Join(root, filepath.FromSlash(name)))
	return err == nil
}

// prose is text without its fenced code blocks, whose lines keep their
// numbers (a fenced line is blank).
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			lines[i] = ""
			continue
		}
		if fenced {
			lines[i] = ""
		}
	}
	return lines
}

// anchors are the fragments a page's headings answer to, as GitHub makes
// them: lower case, punctuation dropped, spaces turned to hyphens.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range prose(text) {
		h := strings.TrimLeft(l, "#")
		if len(h) == len(l) || !strings.HasPrefix(h, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		out[b.String()] = true
	}
	return out
}

var (
	link     = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	codePath = regexp.MustCompile("`([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\\.(?:go|sh|md|yaml|json|mjs))`")
)

// TestLinksStayInTheRepository: every link of the documents names a file
// or folder of the repository, and a heading of it when it has a fragment.
// A link out (a URL, or a path above the repository such as ../shared,
// which a clone does not have) fails.
func TestLinksStayInTheRepository(t *testing.T) {
	for _, page := range pages(t) {
		text := read(t, page)
		for n, l := range prose(text) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				where := page + ":" + strconv.Itoa(n+1) + ": " + target
				if scheme.MatchString(target) {
					t.Errorf("%s: a link leaves the repository", where)
					continue
				}
				file, frag, _ := strings.Cut(target, "#")
				name := page
				if file != "" {
					name = path.Join(path.Dir(page), file)
				}
				if name == ".." || strings.HasPrefix(name, "../") {
					t.Errorf("%s: a link above the repository", where)
					continue
				}
				if !exists(name) {
					t.Errorf("%s: %s does not exist", where, name)
					continue
				}
				if frag != "" && !anchors(read(t, name))[frag] {
					t.Errorf("%s: %s has no heading #%s", where, name, frag)
				}
			}
		}
	}
}

// TestPathsExist: a path written in backticks (`e2e/chaos_test.go`) names
// a file of the repository, from its root or from the page's folder.
func TestPathsExist(t *testing.T) {
	for _, page := range pages(t) {
		for n, l := range prose(read(t, page)) {
			for _, m := range codePath.FindAllStringSubmatch(l, -1) {
				if !exists(m[1]) && !exists(path.Join(path.Dir(page), m[1])) {
					t.Errorf("%s:%d: `%s` does not exist", page, n+1, m[1])
				}
			}
		}
	}
}

// packages are the folders of both modules that hold Go files,
// slash-separated from the repository's root.
func packages(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			if rel = filepath.ToSlash(rel); !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// section is the text of a page's "## title" section.
func section(t *testing.T, text, title string) string {
	t.Helper()
	_, after, ok := strings.Cut(text, "\n## "+title+"\n")
	if !ok {
		t.Fatalf("no section %q", title)
	}
	body, _, _ := strings.Cut(after, "\n## ")
	return body
}

// cells are the cells of a Markdown table's rows, header and rule left out.
func cells(text string) [][]string {
	var out [][]string
	for _, l := range strings.Split(text, "\n") {
		if !strings.HasPrefix(l, "| ") || strings.HasPrefix(l, "| ---") {
			continue
		}
		var row []string
		for _, c := range strings.Split(strings.Trim(l, "|"), " | ") {
			row = append(row, strings.TrimSpace(c))
		}
		out = append(out, row)
	}
	if len(out) > 0 {
		out = out[1:] // the header
	}
	return out
}

// TestPackageMapNamesEveryPackage: the README's package map names every Go
// package of both modules, by its path or under a "prefix/*" row, and every
// name it gives is a folder of the repository.
func TestPackageMapNamesEveryPackage(t *testing.T) {
	var named, prefixes []string
	for _, row := range cells(section(t, read(t, "README.md"), "Packages")) {
		for _, n := range strings.Split(row[0], ", ") {
			n = strings.Trim(n, "`")
			if p, ok := strings.CutSuffix(n, "/*"); ok {
				prefixes = append(prefixes, p+"/")
				n = p
			} else {
				named = append(named, n)
			}
			if !exists(n) {
				t.Errorf("README's package map names %s, which does not exist", n)
			}
		}
	}
	if len(named) == 0 {
		t.Fatal("README's package map has no rows")
	}
	for _, p := range packages(t) {
		if p == "." {
			t.Errorf("a Go file at the repository's root is no package of the map")
			continue
		}
		if !slices.Contains(named, p) && !slices.ContainsFunc(prefixes, func(x string) bool { return strings.HasPrefix(p, x) }) {
			t.Errorf("README's package map does not name package %s", p)
		}
	}
}

var fuzzFunc = regexp.MustCompile(`(?m)^func (Fuzz[A-Za-z0-9_]+)\(`)

// TestFuzzTableNamesEveryTarget: testing.md's fuzz table is every fuzz
// target of both modules, each in its package, and no other.
func TestFuzzTableNamesEveryTarget(t *testing.T) {
	var want []string
	for _, p := range packages(t) {
		files, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(p), "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range fuzzFunc.FindAllStringSubmatch(string(b), -1) {
				want = append(want, p+" "+m[1])
			}
		}
	}
	var got []string
	for _, row := range cells(section(t, read(t, "docs/testing.md"), "Fuzzing")) {
		if len(row) >= 2 && strings.HasPrefix(row[1], "`Fuzz") {
			got = append(got, strings.Trim(row[0], "`")+" "+strings.Trim(row[1], "`"))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("docs/testing.md's fuzz table names (package target)\n%s\nbut the fuzz targets are\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
