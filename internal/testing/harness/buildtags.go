package harness

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// BuildTagged compiles cmd/receiptd with the given build tags into
// dir/name (".exe" added on Windows) and returns the binary's path. Unlike
// Build it never returns a prebuilt binary: the tags are the point. The
// power-cut test builds its negative control with it.
func BuildTagged(ctx context.Context, dir, name string, tags ...string) (string, error) {
	bin := filepath.Join(dir, name)
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", strings.Join(tags, ","), "-o", bin, Package)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s with tags %v: %w: %s", Package, tags, err, strings.TrimSpace(out.String()))
	}
	return bin, nil
}
