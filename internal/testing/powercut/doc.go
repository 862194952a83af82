// Package powercut is a file system for power-loss tests (tests only; the
// daemon never imports it). A Disk keeps every file and directory in two
// versions: what programs see now, and what a disk would still hold after
// the power went off. Mount (Linux, FUSE) serves a Disk at a folder, so the
// real receiptd binary can run on it; PowerOff drops everything not made
// durable, and a new Mount serves what is left.
//
// # What it models
//
// The strict POSIX reading of fsync, as on a disk with a volatile write
// cache and a file system that promises nothing more:
//
//   - File data and size: a write(2)/pwrite(2) or a truncation changes what
//     every reader sees at once (read(2) and mmap(2) through the page cache
//     alike), but only fsync(2) or fdatasync(2) of that file makes it
//     durable. Both count the same: the size is metadata the data needs, so
//     fdatasync persists it too; a write to an O_SYNC or O_DSYNC
//     descriptor is followed by the kernel's own fsync, so it is durable
//     when it returns. PowerOff reverts each file's data and size to its
//     last fsync, entirely.
//   - Or, after KeepAtNextCut, the cut keeps a random part of what was
//     unsynced, as a disk with a volatile write cache may have written any
//     of it, in any order: each unsynced 512-byte sector holds either its
//     last fsynced or its last written bytes (so a 4 KiB page can be torn
//     between sectors, never inside one), each unsynced size change and
//     each directory's unsynced entry changes (as a whole) survive or not.
//     A program that orders its writes without an fsync between them
//     (a commit record written with, not after, its data) fails here.
//   - Directory entries: creating, removing or renaming a name changes the
//     directory at once, but only fsync of that directory makes the change
//     durable. A new file whose data was fsynced but whose directory was not
//     is gone after PowerOff; a file fsynced before its name was removed
//     and the directory not fsynced is back. A rename across directories
//     needs both fsynced.
//   - Not modelled: timestamps (every node shows the mount time), ownership
//     and permission bits (kept as set, never dropped), hard links and
//     symbolic links (refused), fallocate(2) (refused, so callers fall
//     back to writing), extended attributes, sync(2)/syncfs(2)
//     (they make nothing durable here, so a program relying on them fails
//     this model), and the ordering a real file system may add (ext4's
//     data=ordered commits a new file's name with its data on many kernels;
//     this model does not, so it catches a missing directory fsync that
//     ext4 would often hide).
//
// After PowerOff every operation on the old mount fails with EIO until it
// is unmounted; the kernel's page cache of the old mount goes with it, so
// a program started on the next Mount reads only what survived.
//
// # The durable image
//
// The durable version lives in the test process's memory, not in a
// backing folder: a file's durable data belongs to its inode, not to a
// name (a fsynced file whose name is not yet durable has durable data and
// no durable path), which an ordinary folder cannot hold. Pages are 4 KiB
// and sparse, so a bbolt file grown to tens of MiB costs only the pages
// written. A cut therefore also loses the durable image if the test
// process dies; nothing outlives a test.
//
// # The rounds test
//
// TestPowerCut runs the real receiptd binary (package harness) with its
// data directory on a mounted Disk, four POS goroutines posting receipts,
// and the simulator as upstream, down in even rounds (receipts only queue)
// and up in odd ones (receipts are sent, so pages are freed and reused).
// Each round cuts the power at a random time or during a random write
// (PowerOffAtWrite, which lands inside a commit), half of the cuts keeping
// a random part of the unsynced writes, SIGKILLs the daemon,
// unmounts, mounts what survived, runs bbolt's check in a child process
// and restarts the daemon, which must list every receipt it answered 2xx
// and replay the last round's by Idempotency-Key. Every fifth round starts
// on a fresh disk, with an empty data directory or none (the daemon makes
// it), sometimes cut during the daemon's first start.
// Two more sets of rounds are the negative controls and must lose
// receipts: a binary built with the tag receiptd_nosync_unsafe (bbolt
// NoSync, and no flush of the write-ahead log) and one built with
// receiptd_nodirsync_unsafe (no directory fsync). RECEIPTD_POWERCUT_ROUNDS,
// _CONTROL_ROUNDS, _BIN, _CONTROL_BIN, _DIRCONTROL_BIN and _SEED tune it
// (rounds_test.go); with _BIN (and the control binaries) it tests any
// build.
package powercut
