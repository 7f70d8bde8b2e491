package testsupport

import (
	"fmt"
	"os/exec"
)

// GoBuild compiles package pkg into the executable out, from directory dir
// ("" for the current one); the error carries the compiler's output.
func GoBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}
