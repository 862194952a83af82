// Package layout names every file and folder of receiptd's data directory
// (the config's data_dir), so that the daemon, the commands that change the
// directory and the tests take them from one place, as etcd's
// server/storage/datadir does for etcd's. It imports nothing of ours: a
// package that needs a name does not need the package that writes the file.
//
// The directory of a running till:
//
//	<data_dir>/
//	├── receiptd.db        the database (store.OpenDir; the queue, the cache)
//	├── receiptd.db.id     its marker: the database's id and newest transaction (store)
//	├── receiptd.wal/      the write-ahead log: accepted receipts, durable here before
//	│                      they are applied to receiptd.db in batches (queue; wal names
//	│                      the segments)
//	├── fleet/             the push buffer of [fleet] (daemon gives it to fleet, which
//	│                      names the segments and the cursor)
//	├── control/           the OpAMP channel's state, when [control] is on (control)
//	│   ├── instance-uid   the till's UUIDv7, made once
//	│   ├── received.toml  the last fragment received, refused or not
//	│   ├── good.toml      the last fragment applied: what a start lays over the config
//	│   └── status.json    the remote configuration's status
//	├── demo.toml          receiptd demo's own config, when it takes updates (a release runs on it)
//	├── downloads/         releases offered by the head office, being fetched (control)
//	│   └── 3f2a9c81d0e7….part  named by the offer's whole SHA-256; resumed, checked, then taken
//	├── update.json        the update's state: running, previous, offered, rolled back (release)
//	└── versions/          releases taken (`receiptd update apply`, an offer) (release)
//	    └── 1.4.0-3f2a9c81d0e7/   <version>-<first 12 hex digits of the file's SHA-256>
//	        └── receiptd   the verified executable (receiptd.exe on Windows), mode 0755
//
// A file replaced in place (the marker, control's files) is written as
// <name>.tmp first (fileutil.WriteFileAtomic). There is no lock file: bbolt
// locks receiptd.db itself, which is how the commands see a running
// receiptd.
//
// The whole-directory commands (internal/datadir) never delete what they
// replace: they set it aside under its name and why, stamped with the UTC
// time (KeptSuffix), and build the new database under a temporary name
// that a run cut short leaves and the next run removes:
//
//	receiptd.db.before-restore-20261126T101500Z    receiptd restore
//	receiptd.wal.before-restore-20261126T101500Z/  receiptd restore, when the log
//	                                               cannot be applied to that database
//	receiptd.db.damaged-20261126T101500Z           receiptd salvage
//	receiptd.wal.damaged-20261126T101500Z/         receiptd salvage
//	receiptd.wal.before-init-20261126T101500Z/     run -init, beside a new database
//	receiptd.db.restore.tmp                        receiptd restore, until renamed
//	receiptd.db.salvage.tmp                        receiptd salvage, until renamed
package layout
