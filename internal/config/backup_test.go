package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestBackupSectionLoads(t *testing.T) {
	cfg, err := Load(writeConfig(t, "[backup]\ndir = \"/mnt/usb/receiptd\"\nevery = \"15m\"\nkeep = 8\n"))
	require.NoError(t, err)
	require.Equal(t, Backup{Dir: "/mnt/usb/receiptd", Every: Dur(15 * time.Minute), Keep: 8}, cfg.Backup)
}

func TestBackupIsOffByDefault(t *testing.T) {
	b := Default().Backup
	require.Empty(t, b.Dir)
	require.Equal(t, time.Hour, b.Every.Duration)
	require.Equal(t, 48, b.Keep)
}

func TestBackupRefusesBadValues(t *testing.T) {
	cases := []struct{ name, toml, want string }{
		{"relative dir", "[backup]\ndir = \"snapshots\"\n", `backup.dir: must be an absolute path, not "snapshots"`},
		{"dir is data_dir", "data_dir = \"/var/lib/receiptd\"\n[backup]\ndir = \"/var/lib/receiptd/\"\n", "backup.dir: must not be data_dir"},
		{"every below a second", "[backup]\nevery = \"500ms\"\n", "backup.every: must be at least 1s, not 500ms"},
		{"keep 0", "[backup]\nkeep = 0\n", "backup.keep: must be at least 1, not 0"},
		{"unknown key", "[backup]\ndirectory = \"/mnt\"\n", "backup.directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, c.toml))
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, c.want)
		})
	}
}
