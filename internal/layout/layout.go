package layout

import (
	"path/filepath"
	"time"
)

// Names inside the data directory (the package doc draws them).
const (
	// DBFile is the database.
	DBFile = "receiptd.db"
	// MarkerFile is the database's marker: a data directory that held a
	// database refuses a missing, empty or replaced one (store.OpenDir).
	MarkerFile = DBFile + ".id"
	// WALDir is the write-ahead log's folder: accepted receipts are
	// durable there first, and applied to DBFile in batches.
	WALDir = "receiptd.wal"
	// FleetDir is the push buffer's folder: files of its own, never the
	// database, so a push never competes with a receipt for a lock.
	FleetDir = "fleet"
	// ControlDir is the OpAMP channel's folder.
	ControlDir = "control"
	// RestoreTemp is the database receiptd restore builds, until it is
	// renamed to DBFile.
	RestoreTemp = DBFile + ".restore.tmp"
	// SalvageTemp is the database receiptd salvage builds, until it is
	// renamed to DBFile.
	SalvageTemp = DBFile + ".salvage.tmp"
	// UpdateFile is the update's state (JSON): the version running, the
	// previous one, the one offered, and every file rolled back.
	UpdateFile = "update.json"
	// VersionsDir holds the releases taken, one folder each
	// (VersionFolder).
	VersionsDir = "versions"
	// DemoConfigFile is receiptd demo's configuration as a file, for a
	// release the demo switches to (`run -config` on it).
	DemoConfigFile = "demo.toml"
	// DownloadsDir holds the releases offered by the head office while
	// they are fetched (Download).
	DownloadsDir = "downloads"
	// VersionExe is the executable's name in a version's folder; ".exe"
	// is added on Windows (Version).
	VersionExe = "receiptd"
)

// Names inside ControlDir.
const (
	// ControlUIDFile holds the till's instance UID (a UUIDv7, as text).
	ControlUIDFile = "instance-uid"
	// ControlReceivedFile holds the last remote fragment received,
	// refused or not.
	ControlReceivedFile = "received.toml"
	// ControlGoodFile holds the last remote fragment applied: what a
	// start lays over the till's own config file.
	ControlGoodFile = "good.toml"
	// ControlStatusFile holds the remote configuration's status (JSON).
	ControlStatusFile = "status.json"
)

// Why a command set a file or folder aside: the word in its kept name
// (KeptSuffix).
const (
	BeforeRestore = "before-restore" // receiptd restore replaced it
	Damaged       = "damaged"        // receiptd salvage replaced it
	BeforeInit    = "before-init"    // run -init made a new database beside it
)

// stampFormat is the UTC time in a kept name: sortable, and without the
// colons Windows refuses in file names.
const stampFormat = "20060102T150405Z"

// DB is the database's path in dataDir.
func DB(dataDir string) string { return filepath.Join(dataDir, DBFile) }

// Marker is the marker's path in dataDir.
func Marker(dataDir string) string { return filepath.Join(dataDir, MarkerFile) }

// WAL is the write-ahead log's folder in dataDir.
func WAL(dataDir string) string { return filepath.Join(dataDir, WALDir) }

// Fleet is the push buffer's folder in dataDir.
func Fleet(dataDir string) string { return filepath.Join(dataDir, FleetDir) }

// Control is the OpAMP channel's folder in dataDir.
func Control(dataDir string) string { return filepath.Join(dataDir, ControlDir) }

// Update is the update's state file in dataDir.
func Update(dataDir string) string { return filepath.Join(dataDir, UpdateFile) }

// Versions is the releases' folder in dataDir.
func Versions(dataDir string) string { return filepath.Join(dataDir, VersionsDir) }

// DemoConfig is receiptd demo's configuration file in its dataDir.
func DemoConfig(dataDir string) string { return filepath.Join(dataDir, DemoConfigFile) }

// Download is where a release offered with the SHA-256 hexSum is fetched
// to in dataDir, before it is checked and taken into Versions.
func Download(dataDir, hexSum string) string {
	return filepath.Join(dataDir, DownloadsDir, hexSum+".part")
}

// VersionFolder is a release's folder name: its version and the first 12
// hex digits of its SHA-256 (hexSum), so two files signed as one version
// never share a folder.
func VersionFolder(version, hexSum string) string {
	if len(hexSum) > 12 {
		hexSum = hexSum[:12]
	}
	return version + "-" + hexSum
}

// Version is a release's executable in dataDir: exe is "receiptd.exe" on
// Windows, VersionExe elsewhere.
func Version(dataDir, version, hexSum, exe string) string {
	return filepath.Join(Versions(dataDir), VersionFolder(version, hexSum), exe)
}

// KeptSuffix is what a command appends to the name of a file or folder it
// sets aside for why (BeforeRestore, Damaged, BeforeInit) at t:
// ".damaged-20261126T101500Z", in UTC whatever t's zone. One suffix serves
// the database and its log, so the two set aside together say so.
func KeptSuffix(why string, t time.Time) string { return "." + why + "-" + t.UTC().Format(stampFormat) }

// KeptGlob matches what was set aside from path for why, at any time
// (filepath.Glob): for an operator's script, and for tests.
func KeptGlob(path, why string) string { return path + "." + why + "-*" }
