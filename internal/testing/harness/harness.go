// Package harness builds the receiptd binary and runs it as a subprocess, the
// way an operator runs it: `receiptd run -config FILE`. The soak test and the
// benchmark command use it to kill, restart and measure the real program.
//
// It promises that
//   - every Process it starts is owned by its caller: Kill or Stop ends it and
//     waits for it, and cancelling the Start context kills it, so no process
//     outlives the caller that waited on it;
//   - the daemon's standard output and error go to a log file beside the
//     config file (appended across restarts), so a failing test can show it;
//   - nothing here edits the configuration beyond what Start documents
//     (a listen port of 0 is replaced by a free port).
//
// It is a test and benchmark tool; the daemon itself never imports it.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/receiptd/receiptd/internal/config"
)

// Package is the import path of the receiptd command that Build compiles.
const Package = "github.com/receiptd/receiptd/cmd/receiptd"

// Errors. Each is wrapped with the operation and the process id.
var (
	// ErrExited means the process ended before it was asked to (it crashed
	// or refused to start); the message carries the end of its log.
	ErrExited = errors.New("receiptd exited")
	// ErrUnclean means Stop's SIGTERM did not end the process with status
	// 0 before the deadline, or it exited non-zero.
	ErrUnclean = errors.New("receiptd did not stop cleanly")
	// ErrUnsupported means the operation is not available on this system
	// (RSS outside Linux).
	ErrUnsupported = errors.New("not supported on this system")
)

// BinEnv names a prebuilt receiptd binary that Build returns instead of
// compiling one: test binaries run where no Go toolchain is (Windows under
// Wine in CI) use the receiptd.exe built beside them.
const BinEnv = "RECEIPTD_BIN"

// Build compiles cmd/receiptd into dir and returns the binary's path. It runs
// `go build` in the module that contains the working directory, so it works
// from any package's tests and from `go run ./cmd/receiptd-bench`. When
// RECEIPTD_BIN is set, Build returns that file (made absolute) without
// building; it must exist.
func Build(ctx context.Context, dir string) (string, error) {
	if prebuilt := os.Getenv(BinEnv); prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		if err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinEnv, prebuilt, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s: %w", BinEnv, err)
		}
		return abs, nil
	}
	bin := filepath.Join(dir, "receiptd")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, Package)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("build %s: %w: %s", Package, err, strings.TrimSpace(out.String()))
	}
	return bin, nil
}

// given is every address FreeAddr returned in this process. Linux hands a
// port just closed out again soon (about 70 times in 1,000 calls), and two
// tills started at once on one port made the second's WaitReady see the
// first one ready while the second had exited, refused the port.
var given sync.Map

// FreeAddr returns "127.0.0.1:PORT" for a port that was free a moment ago
// and that it never returned before in this process. Another program may
// take it before receiptd binds it; tests on loopback accept that small
// race, and a refusal shows as ErrExited from WaitReady.
func FreeAddr() (string, error) {
	const tries = 100
	for range tries {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("find a free port: %w", err)
		}
		addr := l.Addr().String()
		if err := l.Close(); err != nil {
			return "", fmt.Errorf("find a free port: %w", err)
		}
		if _, dup := given.LoadOrStore(addr, struct{}{}); !dup {
			return addr, nil
		}
	}
	return "", fmt.Errorf("find a free port: %d tries gave only ports already handed out", tries)
}

// WriteConfig writes cfg as TOML to path (mode 0600), so that config.Load
// reads back the same configuration, secrets included (config.FileTOML).
func WriteConfig(path string, cfg config.Config) error {
	data, err := config.FileTOML(cfg)
	if err != nil {
		return fmt.Errorf("encode config %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write config %s: %w", path, err)
	}
	return nil
}

// Start writes cfg to "receiptd.toml" in dir and starts bin with it (see
// StartFile). A Listen address whose port is 0 is replaced by FreeAddr's, so
// the address is known before the process starts and stays the same across
// restarts with the returned Process's Config.
func Start(ctx context.Context, bin, dir string, cfg config.Config) (*Process, error) {
	if strings.HasSuffix(cfg.Listen, ":0") {
		addr, err := FreeAddr()
		if err != nil {
			return nil, err
		}
		cfg.Listen = addr
	}
	path := filepath.Join(dir, "receiptd.toml")
	if err := WriteConfig(path, cfg); err != nil {
		return nil, err
	}
	return StartFile(ctx, bin, path)
}
