//go:build !windows

package harness

import (
	"os"
	"os/exec"
	"syscall"
)

// PrepareStop prepares cmd so that AskToStop reaches it alone; on Unix
// there is nothing to do.
func PrepareStop(*exec.Cmd) {}

// AskToStop asks a process started by cmd (prepared with PrepareStop)
// to stop: SIGTERM, as systemd sends.
func AskToStop(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
