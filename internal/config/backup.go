package config

import (
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Backup is the snapshot loop ([backup]): a verified copy of the database
// written to Dir every Every, the newest Keep kept.
type Backup struct {
	// Dir is where snapshots go: a second disk, a USB stick or a network
	// share; created if missing. Empty (the default) turns snapshots off.
	Dir string `toml:"dir" change:"named"`
	// Every is the time between two snapshots.
	Every Duration `toml:"every" change:"remote"`
	// Keep is how many snapshots are kept; older ones are removed.
	Keep int `toml:"keep" change:"remote"`
}

func defaultBackup() Backup {
	return Backup{Every: Dur(time.Hour), Keep: 48}
}

func (b Backup) check(ch *checker, dataDir string) {
	if b.Dir != "" {
		switch {
		case !filepath.IsAbs(b.Dir):
			ch.add("backup.dir", "must be an absolute path, not %q", b.Dir)
		case samePath(b.Dir, dataDir):
			ch.add("backup.dir", "must not be data_dir: a snapshot on the database's own disk dies with it")
		case within(b.Dir, dataDir):
			ch.add("backup.dir", "must not be inside data_dir (%s): a snapshot on the database's own disk dies with it, and data_dir is receiptd's alone", dataDir)
		case within(dataDir, b.Dir):
			ch.add("backup.dir", "must not hold data_dir (%s): snapshots would be written among the database's own files; name a folder of its own", dataDir)
		}
	}
}

// samePath reports whether a and b, absolute, name one folder once
// cleaned; case-insensitively on Windows, whose file systems ignore case.
func samePath(a, b string) bool {
	return foldPath(a) == foldPath(b)
}

// within reports whether path a, absolute, is below folder b.
func within(a, b string) bool {
	fa, fb := foldPath(a), foldPath(b)
	if !strings.HasSuffix(fb, string(filepath.Separator)) {
		fb += string(filepath.Separator)
	}
	return fa != fb && strings.HasPrefix(fa, fb)
}

func foldPath(p string) string {
	p = filepath.Clean(p)
	if runtime.GOOS == "windows" {
		p = strings.ToLower(p)
	}
	return p
}
