package config

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// absDir is an absolute path on this system (a TOML literal string keeps
// Windows' backslashes as they are).
func absDir(t *testing.T, name string) string { return filepath.Join(t.TempDir(), name) }

func TestBackupSectionLoads(t *testing.T) {
	usb := absDir(t, "usb")
	cfg, err := Load(writeConfig(t, fmt.Sprintf("[backup]\ndir = '%s'\nevery = \"15m\"\nkeep = 8\n", usb)))
	require.NoError(t, err)
	require.Equal(t, Backup{Dir: usb, Every: Dur(15 * time.Minute), Keep: 8}, cfg.Backup)
}

func TestBackupIsOffByDefault(t *testing.T) {
	b := Default().Backup
	require.Empty(t, b.Dir)
	require.Equal(t, time.Hour, b.Every.Duration)
	require.Equal(t, 48, b.Keep)
}

func TestBackupRefusesBadValues(t *testing.T) {
	data := absDir(t, "data")
	cases := []struct{ name, toml, want string }{
		{"relative dir", "[backup]\ndir = \"snapshots\"\n", `backup.dir: must be an absolute path, not "snapshots"`},
		{"dir is data_dir", fmt.Sprintf("data_dir = '%s'\n[backup]\ndir = '%s%c'\n", data, data, filepath.Separator), "backup.dir: must not be data_dir"},
		{"every below a second", "[backup]\nevery = \"500ms\"\n", "backup.every: must be at least 1s, not 500ms"},
		{"keep 0", "[backup]\nkeep = 0\n", "backup.keep: must be at least 1 and at most 1000, not 0"},
		{"unknown key", "[backup]\ndirectory = \"/mnt\"\n", "backup.directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { requireRefused(t, c.toml, c.want) })
	}
}
