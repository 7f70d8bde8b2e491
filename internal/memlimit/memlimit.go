package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Percent is the share of the container's limit the Go runtime is given by
// default: the rest is headroom for what the Go limit does not count
// promptly (memory freed but not yet returned, the kernel's page cache
// charged to the cgroup) and for the overshoot of a soft limit.
const Percent = 90

// Bounds of an explicit QUEEN_KAFKA_MEMORY_LIMIT: below MinSize the
// collector would run without pause; MaxSize only refuses nonsense.
const (
	MinSize = 32 << 20
	MaxSize = 1 << 40
)

// unlimitedV1 is where cgroup v1 reports "no limit": a page-rounded
// MaxInt64, or anything this large.
const unlimitedV1 = 1 << 62

// Sources of a Decision.
const (
	FromGOMEMLIMIT = "GOMEMLIMIT"
	FromSetting    = "QUEEN_KAFKA_MEMORY_LIMIT"
	FromContainer  = "container" // Percent of the cgroup's limit
	FromNone       = "none"
)

// sizeShift is each ParseSize suffix's power of two.
var sizeShift = map[string]uint{"": 0, "B": 0, "KiB": 10, "Ki": 10, "MiB": 20, "Mi": 20, "GiB": 30, "Gi": 30, "TiB": 40, "Ti": 40}

// ParseSize reads a size as QUEEN_KAFKA_MEMORY_LIMIT takes it: bytes, or
// an integer with a B, KiB, MiB, GiB or TiB suffix (GOMEMLIMIT's), or Ki,
// Mi, Gi or Ti (a pod's limit), from MinSize to MaxSize.
func ParseSize(raw string) (int64, error) {
	s := strings.TrimSpace(raw)
	digits := strings.TrimRightFunc(s, func(r rune) bool { return r < '0' || r > '9' })
	unit := s[len(digits):]
	sh, ok := sizeShift[unit]
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil || n > MaxSize>>sh || n<<sh < MinSize {
		return 0, fmt.Errorf("expected a size from 32MiB to 1TiB: bytes, or an integer with a B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti) suffix")
	}
	return n << sh, nil
}

// Container is the memory limit of the cgroup this process runs in, read
// under root ("/" in production): cgroup v2's memory.max or v1's
// memory.limit_in_bytes of the process's own cgroup and each ancestor up
// to the mount, the smallest. ok is false when there is none (not Linux,
// no cgroup mounted, "max", v1's unlimited); file is where it was read.
func Container(root string) (limit int64, file string, ok bool, err error) {
	v1Path, v2Path := ownCgroups(root)
	mount := filepath.Join(root, "sys", "fs", "cgroup")
	if _, serr := os.Stat(filepath.Join(mount, "cgroup.controllers")); serr == nil {
		return smallest(mount, v2Path, "memory.max")
	}
	return smallest(filepath.Join(mount, "memory"), v1Path, "memory.limit_in_bytes")
}

// ownCgroups reads /proc/self/cgroup: the path of the v1 memory
// controller's cgroup and of the v2 unified one ("/" when not listed: a
// container with its own cgroup namespace sees itself at the root).
func ownCgroups(root string) (v1, v2 string) {
	v1, v2 = "/", "/"
	raw, err := os.ReadFile(filepath.Join(root, "proc", "self", "cgroup"))
	if err != nil {
		return v1, v2
	}
	for _, line := range strings.Split(string(raw), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			v2 = parts[2]
		case containsController(parts[1], "memory"):
			v1 = parts[2]
		}
	}
	return v1, v2
}

func containsController(list, want string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == want {
			return true
		}
	}
	return false
}

// smallest reads name in dir/cg and each of its ancestors up to dir and
// returns the smallest limit found.
func smallest(dir, cg, name string) (limit int64, file string, ok bool, err error) {
	cg = path.Clean("/" + cg)
	for {
		f := filepath.Join(dir, filepath.FromSlash(cg), name)
		v, found, rerr := readLimit(f)
		if rerr != nil {
			return 0, "", false, rerr
		}
		if found && (!ok || v < limit) {
			limit, file, ok = v, f, true
		}
		if cg == "/" {
			return limit, file, ok, nil
		}
		cg = path.Dir(cg)
	}
}

// readLimit reads one limit file: found is false when it is absent or
// says there is no limit.
func readLimit(file string) (int64, bool, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	s := strings.TrimSpace(string(raw))
	if s == "max" {
		return 0, false, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, false, fmt.Errorf("%s holds %q, not a memory limit", file, s)
	}
	if v >= unlimitedV1 {
		return 0, false, nil
	}
	return v, true, nil
}

// Decision is the limit boot applies and why.
type Decision struct {
	Limit     int64  // bytes; 0 is none (or GOMEMLIMIT's, which Go applied itself)
	From      string // FromGOMEMLIMIT, FromSetting, FromContainer or FromNone
	Container int64  // the container's limit, 0 when it has none or it was not read
	File      string // where Container was read
}

// Decide picks the limit: GOMEMLIMIT when it is set (goMemLimit, the raw
// variable; the runtime has applied it already), else setting when not 0
// (QUEEN_KAFKA_MEMORY_LIMIT's bytes), else Percent of the container's
// limit read under root, else none. The container is read in every case,
// for the boot line; a read that fails is returned with the decision made
// without it.
func Decide(goMemLimit string, setting int64, root string) (Decision, error) {
	var d Decision
	limit, file, ok, err := Container(root)
	if ok {
		d.Container, d.File = limit, file
	}
	switch {
	case strings.TrimSpace(goMemLimit) != "":
		d.From = FromGOMEMLIMIT
	case setting != 0:
		d.Limit, d.From = setting, FromSetting
	case ok:
		d.Limit, d.From = limit/100*Percent, FromContainer
	default:
		d.From = FromNone
	}
	return d, err
}

// Apply sets the Go runtime's memory limit to d's, unless d leaves it to
// GOMEMLIMIT or has none. It returns the limit in force afterwards
// (math.MaxInt64 for none).
func Apply(d Decision) int64 {
	if d.Limit > 0 && d.From != FromGOMEMLIMIT {
		debug.SetMemoryLimit(d.Limit)
	}
	return debug.SetMemoryLimit(-1)
}

// None is the runtime's "no limit", as Apply returns it.
const None = math.MaxInt64
