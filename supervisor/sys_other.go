//go:build !unix

package supervisor

import (
	"errors"
	"syscall"
)

var errUnsupported = errors.New("QUEEN_KAFKA_EMBEDDED=true needs a Unix system (process groups and signals); run queen-kafka beside the broker instead")

func supported() error { return errUnsupported }

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error { return errUnsupported }
