package testsupport

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcMemory is a process's resident set now (VmRSS) and at its peak
// (VmHWM), in bytes, from /proc/<pid>/status (an error where there is no
// /proc). The peak is what a memory bound is asserted on: it cannot miss a
// spike that came and went between two samples.
func ProcMemory(pid int) (rss, peak int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	field := func(name string) (int64, error) {
		for _, l := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					return 0, fmt.Errorf("/proc/%d/status %s: %w", pid, name, err)
				}
				return kb << 10, nil
			}
		}
		return 0, fmt.Errorf("/proc/%d/status: no %s", pid, name)
	}
	if rss, err = field("VmRSS"); err != nil {
		return 0, 0, err
	}
	if peak, err = field("VmHWM"); err != nil {
		return 0, 0, err
	}
	return rss, peak, nil
}

// OpenFiles is how many file descriptors process pid holds now.
func OpenFiles(pid int) (int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents), err
}

// ResetPeakMemory lowers process pid's VmHWM to its resident set now
// (Linux's clear_refs 5), so that the next ProcMemory's peak is the peak
// since this call: a benchmark reads one peak per round of one process.
func ResetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
