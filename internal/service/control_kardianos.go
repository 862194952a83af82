package service

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	kservice "github.com/kardianos/service"
)

// kardianosControl is the Windows service manager through
// kardianos/service. It cannot tell a failed service from a stopped one,
// so a stopped service's reason is the end of the daemon's log file.
type kardianosControl struct {
	s       kservice.Service
	logFile string // where the service logs by default
}

func newKardianosControl(s kservice.Service) *kardianosControl {
	return &kardianosControl{s: s, logFile: DefaultLogFile()}
}

func (c *kardianosControl) where() string {
	return strings.TrimSuffix(c.s.Platform(), "-service") + " service " + Name
}

func (c *kardianosControl) settle() time.Duration { return defaultSettle }

func (c *kardianosControl) status() (svcStatus, error) {
	st, err := c.s.Status()
	switch {
	case errors.Is(err, kservice.ErrNotInstalled):
		return svcStatus{state: svcNotInstalled}, nil
	case err != nil:
		return svcStatus{}, fmt.Errorf("service status: %w", err)
	case st == kservice.StatusRunning:
		return svcStatus{state: svcRunning}, nil
	case st == kservice.StatusStopped:
		return svcStatus{state: svcStopped, reason: logTail(c.logFile, 6)}, nil
	}
	return svcStatus{state: svcStarting}, nil
}

func (c *kardianosControl) start() error {
	if err := c.s.Start(); err != nil {
		return fmt.Errorf("start service %s: %w", Name, err)
	}
	return nil
}

func (c *kardianosControl) stop() error {
	if err := c.s.Stop(); err != nil {
		return fmt.Errorf("stop service %s: %w", Name, err)
	}
	return nil
}

func (c *kardianosControl) uninstall() error {
	if err := c.s.Uninstall(); err != nil {
		return fmt.Errorf("uninstall service %s: %w", Name, err)
	}
	return nil
}

// logTail returns the lines that explain the end of the log file at path
// (its last 16 KiB), or "" when there is none.
func logTail(path string, max int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 16 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	return strings.Join(reasonLines(string(b), max), "\n")
}
