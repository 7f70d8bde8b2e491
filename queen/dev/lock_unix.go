//go:build unix

package dev

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive advisory lock so that two brokers never append
// to one log.
func lockDir(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("locked by another process: %w", err)
	}
	return f, nil
}
