package service

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// systemdRunDir exists when systemd is the running init system (the test
// sd_booted(3) makes).
const systemdRunDir = "/run/systemd/system"

// systemdManager runs receiptd.service through systemctl, and reads why it
// failed from journalctl: the service manager's own answers, never a bare
// exit status.
type systemdManager struct {
	unit       string // "receiptd.service"
	systemctl  string // command names or paths
	journalctl string
	// uninstallUnit removes the unit file `receiptd install` wrote (and
	// disables it); kardianos/service's systemd backend.
	uninstallUnit func() error
	// settleFor is how long start watches the started unit; zero means
	// defaultSettle (tests of a fake systemctl shorten it).
	settleFor time.Duration
}

func newSystemdManager(uninstall func() error) *systemdManager {
	return &systemdManager{unit: Name + ".service", systemctl: "systemctl", journalctl: "journalctl",
		uninstallUnit: uninstall}
}

func (m *systemdManager) where() string { return "systemd unit " + m.unit }

func (m *systemdManager) settle() time.Duration {
	if m.settleFor > 0 {
		return m.settleFor
	}
	return defaultSettle
}

// command runs name with args and returns its output; a failure carries
// what the command printed, not only its exit status.
func (m *systemdManager) command(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		return string(out), fmt.Errorf("%s %s: %s", name, strings.Join(args, " "), msg)
	}
	return string(out), nil
}

// show returns the unit's properties as systemctl show prints them.
func (m *systemdManager) show() (map[string]string, error) {
	out, err := m.command(m.systemctl, "show", m.unit, "--no-pager",
		"-p", "LoadState", "-p", "ActiveState", "-p", "SubState", "-p", "Result",
		"-p", "ExecMainStatus", "-p", "FragmentPath", "-p", "InvocationID")
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			props[k] = v
		}
	}
	return props, nil
}

func (m *systemdManager) status() (svcStatus, error) {
	p, err := m.show()
	if err != nil {
		return svcStatus{}, err
	}
	st := svcStatus{packaged: strings.HasPrefix(p["FragmentPath"], "/lib/") ||
		strings.HasPrefix(p["FragmentPath"], "/usr/lib/")}
	switch active, sub := p["ActiveState"], p["SubState"]; {
	case p["LoadState"] == "not-found" || p["LoadState"] == "":
		st.state = svcNotInstalled
	case active == "active" || active == "reloading":
		st.state = svcRunning
	case active == "activating" && sub == "auto-restart", active == "failed":
		st.state = svcFailed
	case active == "activating":
		st.state = svcStarting
	case active == "inactive" && p["Result"] != "" && p["Result"] != "success":
		st.state = svcFailed
	default:
		st.state = svcStopped
	}
	if st.state == svcFailed {
		st.reason = m.reason(p)
	}
	return st, nil
}

// reason is what the daemon wrote in its last run (journalctl, that run's
// lines only), without its routine info lines; or else systemd's verdict.
func (m *systemdManager) reason(p map[string]string) string {
	args := []string{"-u", m.unit}
	if id := p["InvocationID"]; id != "" {
		args = []string{"_SYSTEMD_INVOCATION_ID=" + id}
	}
	out, err := m.command(m.journalctl, append(args, "-o", "cat", "--no-pager", "-n", "40")...)
	var lines []string
	if err == nil {
		lines = reasonLines(out, 8)
	}
	if len(lines) > 0 {
		return strings.Join(lines, "\n")
	}
	if r := p["Result"]; r != "" && r != "success" {
		return fmt.Sprintf("systemd reports %s, exit status %s; see: journalctl -u %s", r, p["ExecMainStatus"], m.unit)
	}
	return ""
}

// reasonLines keeps the last max lines of a run's output that explain it:
// plain text (a refusal printed on standard error) and JSON log lines at
// warn or above, shown as "message: error".
func reasonLines(out string, max int) []string {
	var keep []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = strings.TrimRight(line, "\r ")
		if line == "" {
			continue
		}
		var entry struct{ Level, Msg, Error string }
		if strings.HasPrefix(line, "{") && json.Unmarshal([]byte(line), &entry) == nil {
			if entry.Level == "debug" || entry.Level == "info" {
				continue
			}
			line = entry.Msg
			if entry.Error != "" {
				line += ": " + entry.Error
			}
		}
		keep = append(keep, line)
	}
	if len(keep) > max {
		keep = keep[len(keep)-max:]
	}
	return keep
}

func (m *systemdManager) start() error {
	_, err := m.command(m.systemctl, "start", m.unit)
	return err
}

func (m *systemdManager) stop() error {
	_, err := m.command(m.systemctl, "stop", m.unit)
	return err
}

func (m *systemdManager) uninstall() error { return m.uninstallUnit() }

// systemdMissing explains why there is no service on a Linux system whose
// init is not systemd, or "" when systemd runs.
func systemdMissing() string {
	if _, err := os.Stat(systemdRunDir); err == nil {
		return ""
	}
	return "this system does not run systemd (there is no " + systemdRunDir + ")"
}
