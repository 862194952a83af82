package store

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
)

// bbolt's on-disk meta page, as written by bbolt v1 (internal/common): a
// 16-byte page header, then magic, version, page size, flags (4 bytes
// each), the root bucket (root page id, sequence), the freelist page id,
// the high-water page id, the transaction id (8 bytes each) and an FNV-64a
// checksum of everything before it. Fields are in the machine's byte order.
const (
	pageHeaderSize = 16
	metaSize       = 64
	metaSumOffset  = 56
	boltMagic      = 0xED0CDAED
	boltVersion    = 2
)

// boltMeta is what checkSize needs from a meta page.
type boltMeta struct {
	pageSize uint32
	highPage uint64 // pages in use: the file must hold at least this many
	txid     uint64
}

// readMeta decodes the meta page at off; ok is false when it is not a
// valid meta page (torn, foreign, or past the end of the file).
func readMeta(f *os.File, off int64) (boltMeta, bool) {
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := f.ReadAt(buf, off); err != nil {
		return boltMeta{}, false
	}
	m := buf[pageHeaderSize:]
	ne := binary.NativeEndian
	if ne.Uint32(m[0:]) != boltMagic || ne.Uint32(m[4:]) != boltVersion {
		return boltMeta{}, false
	}
	h := fnv.New64a()
	_, _ = h.Write(m[:metaSumOffset])
	if h.Sum64() != ne.Uint64(m[metaSumOffset:]) {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: ne.Uint32(m[8:]), highPage: ne.Uint64(m[40:]), txid: ne.Uint64(m[48:])}, true
}

// UsedSize is how many bytes of the database at path its newest valid
// meta page says are in use (its high-water page times its page size):
// the data to walk, not the file's size, which bbolt pads (on Windows to
// the whole initial mapping, 64 MiB). A file without a valid meta page
// gives its size.
func UsedSize(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	best, ok := newestMeta(f)
	if !ok {
		return fi.Size(), nil
	}
	return min(int64(best.highPage)*int64(best.pageSize), fi.Size()), nil
}

// newestMeta is the valid meta page with the newest transaction.
func newestMeta(f *os.File) (boltMeta, bool) {
	m0, ok0 := readMeta(f, 0)
	// The second meta page is one page in; when the first is torn, the
	// page size is unknown and bbolt's guess (the OS page size) is used.
	second := int64(os.Getpagesize())
	if ok0 {
		second = int64(m0.pageSize)
	}
	m1, ok1 := readMeta(f, second)
	if ok1 && (!ok0 || m1.txid > m0.txid) {
		return m1, true
	}
	return m0, ok0
}

// checkSize refuses a file shorter than its newest valid meta page says
// it is. bbolt maps the file and reads pages past its end as memory, which
// is a SIGBUS crash (no error, no recover) when the file was truncated.
// A file with no valid meta page is left to bbolt, which reports it.
func checkSize(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	if fi.Size() < pageHeaderSize+metaSize {
		return fmt.Errorf("open database %s: %w: the file is %d bytes, too short for a database", path, ErrCorrupt, fi.Size())
	}
	best, ok := newestMeta(f)
	if !ok {
		return nil
	}
	need := int64(best.highPage) * int64(best.pageSize)
	if fi.Size() < need {
		return fmt.Errorf("open database %s: %w: the file is truncated: %d bytes, but its last transaction uses %d "+
			"(restore a backup with `receiptd restore FILE`)", path, ErrCorrupt, fi.Size(), need)
	}
	return nil
}
