package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// tree writes files (path relative to root → content) under a new root.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestContainerReadsCgroups: the limit of the process's cgroup, v2 or v1,
// from fake cgroup files; the smallest of it and its ancestors; none for
// "max", v1's unlimited and no cgroup at all; an unreadable value is an
// error.
func TestContainerReadsCgroups(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name  string
		files map[string]string
		want  int64 // 0: none
		file  string
	}{
		{"v2 namespace root", map[string]string{
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
			"sys/fs/cgroup/memory.max":         "536870912\n",
		}, 512 * mib, "sys/fs/cgroup/memory.max"},
		{"v2 max", map[string]string{
			"proc/self/cgroup":                 "0::/\n",
			"sys/fs/cgroup/cgroup.controllers": "memory\n",
			"sys/fs/cgroup/memory.max":         "max\n",
		}, 0, ""},
		{"v2 nested, the pod smaller than the container", map[string]string{
			"proc/self/cgroup":                           "0::/kubepods/pod1/ctr\n",
			"sys/fs/cgroup/cgroup.controllers":           "memory\n",
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":     "268435456\n",
			"sys/fs/cgroup/kubepods/memory.max":          "1073741824\n",
		}, 256 * mib, "sys/fs/cgroup/kubepods/pod1/memory.max"},
		{"v1", map[string]string{
			"proc/self/cgroup": "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n1:name=systemd:/docker/abc\n",
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "402653184\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            "9223372036854771712\n",
		}, 384 * mib, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"},
		{"v1 unlimited", map[string]string{
			"proc/self/cgroup":                           "4:memory:/\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
		}, 0, ""},
		{"no cgroup", map[string]string{}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := tree(t, tc.files)
			got, file, ok, err := Container(root)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != 0) || got != tc.want {
				t.Fatalf("limit %d ok %v, want %d", got, ok, tc.want)
			}
			if tc.file != "" && file != filepath.Join(root, filepath.FromSlash(tc.file)) {
				t.Errorf("read from %s, want %s", file, tc.file)
			}
		})
	}
	root := tree(t, map[string]string{"sys/fs/cgroup/cgroup.controllers": "memory\n", "sys/fs/cgroup/memory.max": "lots\n"})
	if _, _, _, err := Container(root); err == nil {
		t.Error("a garbled memory.max read as no limit")
	}
}

// TestDecide: GOMEMLIMIT wins (the runtime applied it), then an explicit
// QUEEN_KAFKA_MEMORY_LIMIT, then Percent of the container's limit, else
// none.
func TestDecide(t *testing.T) {
	ctr := tree(t, map[string]string{
		"sys/fs/cgroup/cgroup.controllers": "memory\n",
		"sys/fs/cgroup/memory.max":         "536870912\n",
	})
	bare := tree(t, nil)
	for _, tc := range []struct {
		name       string
		gomemlimit string
		setting    int64
		root       string
		limit      int64
		from       string
	}{
		{"GOMEMLIMIT wins", "400MiB", 300 << 20, ctr, 0, FromGOMEMLIMIT},
		{"the variable", "", 300 << 20, ctr, 300 << 20, FromSetting},
		{"the container", "", 0, ctr, 536870912 / 100 * 90, FromContainer},
		{"nothing", "", 0, bare, 0, FromNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.gomemlimit, tc.setting, tc.root)
			if err != nil {
				t.Fatal(err)
			}
			if d.Limit != tc.limit || d.From != tc.from {
				t.Fatalf("%+v, want limit %d from %s", d, tc.limit, tc.from)
			}
			if tc.root == ctr && d.Container != 536870912 {
				t.Errorf("container %d", d.Container)
			}
		})
	}
}

// TestApply: a decided limit is the runtime's; GOMEMLIMIT's and none leave
// it as it is.
func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	if got := Apply(Decision{Limit: 300 << 20, From: FromSetting}); got != 300<<20 {
		t.Fatalf("applied %d", got)
	}
	if got := Apply(Decision{From: FromGOMEMLIMIT}); got != 300<<20 {
		t.Fatalf("GOMEMLIMIT's decision changed the limit to %d", got)
	}
	if got := Apply(Decision{From: FromNone}); got != 300<<20 {
		t.Fatalf("no decision changed the limit to %d", got)
	}
}

func TestParseSize(t *testing.T) {
	for raw, want := range map[string]int64{
		"33554432": 32 << 20, "512MiB": 512 << 20, "512Mi": 512 << 20, "1GiB": 1 << 30, "2Gi": 2 << 30,
		"1TiB": 1 << 40, "65536KiB": 64 << 20, "33554432B": 32 << 20,
	} {
		if got, err := ParseSize(raw); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{"", "0", "-1", "33554431", "31MiB", "1025GiB", "2TiB", "512MB", "512 MiB", "lots", "9223372036854775807Ti"} {
		if _, err := ParseSize(raw); err == nil {
			t.Errorf("%q accepted", raw)
		}
	}
}
