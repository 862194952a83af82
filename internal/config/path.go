package config

import (
	"os"
	"path/filepath"
	"runtime"
)

// DefaultPath is where receiptd looks for its config file without
// -config: /etc/receiptd/config.toml, or on Windows
// %ProgramData%\receiptd\config.toml.
func DefaultPath() string {
	if runtime.GOOS == "windows" {
		return filepath.Join(programData(), "receiptd", "config.toml")
	}
	return "/etc/receiptd/config.toml"
}

// defaultDataDir is /var/lib/receiptd, or on Windows
// %ProgramData%\receiptd\data: never relative to the working directory,
// which for a service is the system folder.
func defaultDataDir() string {
	if runtime.GOOS == "windows" {
		return filepath.Join(programData(), "receiptd", "data")
	}
	return "/var/lib/receiptd"
}

func programData() string {
	if dir := os.Getenv("ProgramData"); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	return `C:\ProgramData`
}
