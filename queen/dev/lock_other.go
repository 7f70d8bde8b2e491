//go:build !unix

package dev

import "os"

// lockDir only creates the lock file where flock is unavailable.
func lockDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
