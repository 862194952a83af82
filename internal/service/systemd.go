package service

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/config"
)

// systemdUnit is the unit `receiptd install` writes on Linux: the same
// hardening as packaging/systemd/receiptd.service, with ReadWritePaths
// taken from the configuration being installed. The {{...}} actions are
// kardianos/service's template engine (Description, Path, Arguments,
// UserName, Restart); the paths are put in here, quoted for systemd.
func systemdUnit(cfg config.Config) (string, error) {
	paths := writablePaths(cfg)
	quoted := make([]string, 0, len(paths))
	for _, p := range paths {
		if strings.Contains(p, "{{") || strings.ContainsAny(p, "\n\r") {
			return "", fmt.Errorf("path %q cannot go into a systemd unit", p)
		}
		quoted = append(quoted, systemdQuote(p))
	}
	stop := cfg.ShutdownTimeout.Duration + 20*time.Second
	return strings.NewReplacer(
		"@READWRITE@", strings.Join(quoted, " "),
		"@STOPSEC@", fmt.Sprint(int(stop.Seconds())),
	).Replace(systemdTemplate), nil
}

// writablePaths are the directories the daemon writes to: data_dir, the
// log file's directory and the Unix socket's directory, without repeats.
// They are Linux paths (the unit is for systemd), so slash-separated
// whichever system runs this.
func writablePaths(cfg config.Config) []string {
	paths := []string{path.Clean(cfg.DataDir)}
	if cfg.Log.File != "" {
		paths = append(paths, path.Dir(cfg.Log.File))
	}
	if cfg.ListenUnix != "" {
		paths = append(paths, path.Dir(cfg.ListenUnix))
	}
	slices.Sort(paths)
	return slices.Compact(paths)
}

// systemdQuote quotes a path for a unit file list setting: '%' is a
// specifier, and spaces separate list items.
func systemdQuote(p string) string {
	p = strings.ReplaceAll(p, "%", "%%")
	if !strings.ContainsAny(p, " \t\"'\\") {
		return p
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(p) + `"`
}

const systemdTemplate = `# Written by "receiptd install". Change settings with a drop-in
# ("systemctl edit receiptd"); "receiptd uninstall" removes this file.
[Unit]
Description={{Description}}
Wants=network-online.target
After=network-online.target
StartLimitIntervalSec=0

[Service]
Type=simple
User={{UserName}}
Group={{UserName}}
EnvironmentFile=-/etc/receiptd/environment
ExecStart={{Path | cmdEscape}}{{range Arguments}} {{. | cmd}}{{end}}
Restart={{Restart}}
RestartSec=2
TimeoutStopSec=@STOPSEC@
KillSignal=SIGTERM
KillMode=mixed

StateDirectory=receiptd
StateDirectoryMode=0750
LogsDirectory=receiptd
LogsDirectoryMode=0750
RuntimeDirectory=receiptd
RuntimeDirectoryMode=0750
UMask=0027

ProtectSystem=strict
ReadWritePaths=@READWRITE@
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
ProtectProc=invisible
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged
SystemCallErrorNumber=EPERM

[Install]
WantedBy=multi-user.target
`
