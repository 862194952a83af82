package config

import (
	"path/filepath"
	"time"
)

// Backup is the snapshot loop ([backup]): a verified copy of the database
// written to Dir every Every, the newest Keep kept.
type Backup struct {
	// Dir is where snapshots go: a second disk, a USB stick or a network
	// share; created if missing. Empty (the default) turns snapshots off.
	Dir string `toml:"dir" change:"remote"`
	// Every is the time between two snapshots.
	Every Duration `toml:"every" change:"remote"`
	// Keep is how many snapshots are kept; older ones are removed.
	Keep int `toml:"keep" change:"remote"`
}

// minBackupEvery bounds backup.every: snapshots are named by the second.
const minBackupEvery = time.Second

func defaultBackup() Backup {
	return Backup{Every: Dur(time.Hour), Keep: 48}
}

func (b Backup) check(ch *checker, dataDir string) {
	if b.Dir != "" {
		switch {
		case !filepath.IsAbs(b.Dir):
			ch.add("backup.dir", "must be an absolute path, not %q", b.Dir)
		case filepath.Clean(b.Dir) == filepath.Clean(dataDir):
			ch.add("backup.dir", "must not be data_dir: a snapshot on the database's own disk dies with it")
		}
	}
	if b.Every.Duration < minBackupEvery {
		ch.add("backup.every", "must be at least %s, not %s", minBackupEvery, b.Every)
	}
	if b.Keep < 1 {
		ch.add("backup.keep", "must be at least 1, not %d", b.Keep)
	}
}
