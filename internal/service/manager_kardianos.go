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

// kardianosManager is the Windows service manager through
// kardianos/service. It cannot tell a failed service from a stopped one,
// so a stopped service's reason is the end of the daemon's log file.
type kardianosManager struct {
	s       kservice.Service
	logFile string // where the service logs by default
}

func newKardianosManager(s kservice.Service) *kardianosManager {
	return &kardianosManager{s: s, logFile: DefaultLogFile()}
}

func (m *kardianosManager) where() string {
	return strings.TrimSuffix(m.s.Platform(), "-service") + " service " + Name
}

func (m *kardianosManager) settle() time.Duration { return defaultSettle }

func (m *kardianosManager) status() (svcStatus, error) {
	st, err := m.s.Status()
	switch {
	case errors.Is(err, kservice.ErrNotInstalled):
		return svcStatus{state: svcNotInstalled}, nil
	case err != nil:
		return svcStatus{}, fmt.Errorf("service status: %w", err)
	case st == kservice.StatusRunning:
		return svcStatus{state: svcRunning}, nil
	case st == kservice.StatusStopped:
		return svcStatus{state: svcStopped, reason: logTail(m.logFile, 6)}, nil
	}
	return svcStatus{state: svcStarting}, nil
}

func (m *kardianosManager) start() error {
	if err := m.s.Start(); err != nil {
		return fmt.Errorf("start service %s: %w", Name, err)
	}
	return nil
}

func (m *kardianosManager) stop() error {
	if err := m.s.Stop(); err != nil {
		return fmt.Errorf("stop service %s: %w", Name, err)
	}
	return nil
}

func (m *kardianosManager) uninstall() error {
	if err := m.s.Uninstall(); err != nil {
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
