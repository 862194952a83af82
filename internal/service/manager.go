package service

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// svcState is what a service command found the system service to be.
type svcState int

const (
	svcNotInstalled svcState = iota
	svcStopped               // installed, not running, and not failing
	svcRunning
	svcFailed // ended with an error, or restarting after one
	svcStarting
)

// svcStatus is a service's state with what explains it: the reason of a
// failure (from the journal or the log), in the operator's terms.
type svcStatus struct {
	state  svcState
	reason string // svcFailed: the last lines the daemon wrote
	// packaged: the unit comes from the .deb/.rpm, which owns it.
	packaged bool
}

// manager is what the service commands ask of the system's service
// manager: systemd on Linux (systemctl and journalctl), the Windows service
// manager elsewhere.
type manager interface {
	status() (svcStatus, error)
	start() error
	stop() error
	// uninstall removes the service definition; the service is stopped.
	uninstall() error
	// where names the definition, for messages ("systemd unit ...").
	where() string
	// settle is how long start watches a service that reports running
	// before believing it: defaultSettle.
	settle() time.Duration
}

// defaultSettle is how long start watches a service that reports running
// before believing it: a daemon that refuses its config or database exits
// within a second or two (docs/contract.md), after the service manager said
// "started".
const defaultSettle = 3 * time.Second

// pollEvery is the pace of that watch.
const pollEvery = 200 * time.Millisecond

// notInstalledError is a service command's answer when there is no service.
func notInstalledError(why string) error {
	if why != "" {
		return fmt.Errorf("service %s is not installed: %s", Name, why)
	}
	return fmt.Errorf("service %s is not installed; install it with: receiptd install", Name)
}

// failedError reports a failed start with the daemon's own words.
func failedError(st svcStatus) error {
	reason := strings.TrimSpace(st.reason)
	if reason == "" {
		return fmt.Errorf("service %s failed to start, and left no reason in its log", Name)
	}
	return fmt.Errorf("service %s failed to start: %s", Name, indentLines(reason))
}

// indentLines keeps a multi-line reason readable under the first line.
func indentLines(s string) string {
	return strings.ReplaceAll(s, "\n", "\n  ")
}

// waitStarted watches a service just started until it has run for
// m.settle() without failing, or failed.
func waitStarted(m manager) error {
	settle := m.settle()
	deadline := time.Now().Add(settle)
	for {
		st, err := m.status()
		if err != nil {
			return err
		}
		switch st.state {
		case svcFailed:
			return failedError(st)
		case svcStopped:
			return failedError(st)
		case svcNotInstalled:
			return notInstalledError("")
		}
		if time.Now().After(deadline) {
			if st.state == svcRunning {
				return nil
			}
			return fmt.Errorf("service %s is still starting after %s; see: receiptd status", Name, settle)
		}
		time.Sleep(pollEvery)
	}
}

// manage carries out action (status, start, stop, restart,
// uninstall) on the service m runs, and tells the truth about it.
func manage(out io.Writer, m manager, action string) error {
	st, err := m.status()
	if err != nil {
		return err
	}
	if st.state == svcNotInstalled {
		if action == "uninstall" {
			fmt.Fprintf(out, "service %s is not installed; nothing to remove\n", Name)
			return nil
		}
		return notInstalledError("")
	}
	switch action {
	case "status":
		return reportStatus(out, st)
	case "start":
		if st.state == svcRunning {
			fmt.Fprintf(out, "%s: already running\n", Name)
			return nil
		}
		return startAndWatch(out, m, "started")
	case "stop":
		if st.state == svcStopped {
			fmt.Fprintf(out, "%s: already stopped\n", Name)
			return nil
		}
		if err := m.stop(); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: stopped\n", Name)
		return nil
	case "restart":
		if st.state != svcStopped {
			if err := m.stop(); err != nil {
				return err
			}
		}
		return startAndWatch(out, m, "restarted")
	case "uninstall":
		return uninstallService(out, m, st)
	}
	return fmt.Errorf("unknown service action %q", action)
}

func reportStatus(out io.Writer, st svcStatus) error {
	switch st.state {
	case svcRunning:
		fmt.Fprintf(out, "%s: running\n", Name)
		return nil
	case svcStopped:
		return fmt.Errorf("service %s is installed but stopped; start it with: receiptd start", Name)
	case svcStarting:
		return fmt.Errorf("service %s is starting", Name)
	}
	return failedError(st)
}

func startAndWatch(out io.Writer, m manager, done string) error {
	if err := m.start(); err != nil {
		if st, serr := m.status(); serr == nil && st.reason != "" {
			return fmt.Errorf("%w\n  %s", err, indentLines(st.reason))
		}
		return err
	}
	if err := waitStarted(m); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: %s, running\n", Name, done)
	return nil
}

func uninstallService(out io.Writer, m manager, st svcStatus) error {
	if st.packaged {
		return fmt.Errorf("service %s is installed by the receiptd package; remove the package instead "+
			"(apt remove receiptd, or dnf remove receiptd)", Name)
	}
	// A running service would keep running, unmanaged, after its
	// definition is gone.
	if st.state != svcStopped {
		if err := m.stop(); err != nil {
			return fmt.Errorf("stop before uninstalling: %w", err)
		}
	}
	if err := m.uninstall(); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: uninstalled (%s removed)\n", Name, m.where())
	return nil
}

// withoutServiceManager answers a service command on Linux without
// systemd: nothing is installed. uninstall still removes a SysV script an
// earlier receiptd (before it refused to write one) left under etc.
func withoutServiceManager(out io.Writer, action, why, etc string) error {
	if action != "uninstall" {
		return notInstalledError(why)
	}
	script := filepath.Join(etc, "init.d", Name)
	if _, err := os.Lstat(script); err != nil {
		fmt.Fprintf(out, "service %s is not installed: %s; nothing to remove\n", Name, why)
		return nil
	}
	links, _ := filepath.Glob(filepath.Join(etc, "rc?.d", "[SK][0-9][0-9]"+Name))
	for _, p := range append(links, script) {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("remove the SysV script an earlier receiptd install wrote: %w", err)
		}
	}
	fmt.Fprintf(out, "%s: removed %s, the SysV script an earlier receiptd install wrote (stop a running "+
		"receiptd yourself)\n", Name, script)
	return nil
}
