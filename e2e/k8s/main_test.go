package k8s

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the tests in the repository's k8s folder, where the
// manifests, the entrypoint and (one up) the Dockerfile are: the tests name
// them by their paths from there.
func TestMain(m *testing.M) {
	if err := os.Chdir("../../k8s"); err != nil {
		fmt.Fprintln(os.Stderr, "k8s manifests:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
