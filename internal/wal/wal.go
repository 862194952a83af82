package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Sentinel errors. Every error of this package that matches one names the
// file or directory and the operation.
var (
	// ErrCorrupt means a segment the log needs is damaged, missing, or
	// belongs to another database.
	ErrCorrupt = errors.New("write-ahead log is damaged")
	// ErrFailed means an earlier write or flush failed; the log must be
	// closed and opened again.
	ErrFailed = errors.New("write-ahead log write failed earlier; reopen required")
	// ErrDiskFull means a new segment could not be made for want of space:
	// the record was not appended. Appends try again.
	ErrDiskFull = errors.New("disk full: the write-ahead log cannot grow")
	// ErrClosed means the log has been closed.
	ErrClosed = errors.New("write-ahead log is closed")
	// ErrTooLarge means a record does not fit in a segment.
	ErrTooLarge = errors.New("write-ahead log record too large")
)

const (
	magic      = "RDWAL001"
	headerSize = 32
	recHeader  = 16
	segSuffix  = ".wal"
	// DefaultSegmentSize is the size of a segment: about 1,300 typical
	// receipts. The log keeps two while it runs (the current one and the
	// spare), so this is its footprint on a till's disk; a receipt larger
	// than a segment (up to accept's 1 MiB body limit) goes to the
	// database directly (package queue).
	DefaultSegmentSize = 1 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one record of the log.
type Record struct {
	LSN  uint64
	Data []byte
}

// segName is the file name of the segment whose first record is first.
func segName(first uint64) string { return fmt.Sprintf("%016x%s", first, segSuffix) }

// parseSegName returns the first LSN a segment's file name says.
func parseSegName(name string) (uint64, bool) {
	hex, ok := strings.CutSuffix(name, segSuffix)
	if !ok || len(hex) != 16 {
		return 0, false
	}
	n, err := strconv.ParseUint(hex, 16, 64)
	return n, err == nil && n > 0
}

func encodeHeader(id, first uint64) []byte {
	h := make([]byte, headerSize)
	copy(h, magic)
	binary.BigEndian.PutUint64(h[8:], id)
	binary.BigEndian.PutUint64(h[16:], first)
	binary.BigEndian.PutUint32(h[24:], crc32.Checksum(h[:24], castagnoli))
	return h
}

// appendRecord appends the encoded record (lsn, data) for the segment
// whose first record is first to buf.
func appendRecord(buf []byte, first, lsn uint64, data []byte) []byte {
	var h [recHeader]byte
	binary.BigEndian.PutUint32(h[0:], uint32(len(data)))
	binary.BigEndian.PutUint64(h[8:], lsn)
	binary.BigEndian.PutUint32(h[4:], recordCRC(first, h[8:16], data))
	buf = append(buf, h[:]...)
	return append(buf, data...)
}

// recordCRC is a record's checksum: of its segment's first LSN, its own
// LSN and its payload. The segment's LSN ties a record to the segment it
// was written for, so a record left in a recycled segment (written when
// the file was another segment) never checks out, even where a cut left a
// hole before it and its own LSN comes round again.
func recordCRC(first uint64, lsn, payload []byte) uint32 {
	var f [8]byte
	binary.BigEndian.PutUint64(f[:], first)
	crc := crc32.Update(crc32.Checksum(f[:], castagnoli), castagnoli, lsn)
	return crc32.Update(crc, castagnoli, payload)
}

// segFile is a segment found on disk.
type segFile struct {
	first uint64
	path  string
}

// listSegments returns dir's segments, oldest first. Files that are not
// segments (a spare, a temporary file) are left out.
func listSegments(dir string) ([]segFile, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read write-ahead log %s: %w", dir, err)
	}
	var out []segFile
	for _, e := range ents {
		if first, ok := parseSegName(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, segFile{first: first, path: filepath.Join(dir, e.Name())})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// readSegment parses one segment's bytes: the records from its first LSN
// on, up to the first that is not valid. It checks the header against id
// and the file name's LSN.
func readSegment(path string, data []byte, id, first uint64) ([]Record, error) {
	if len(data) < headerSize {
		return nil, fmt.Errorf("%w: segment %s is %d bytes, shorter than its header", ErrCorrupt, path, len(data))
	}
	h := data[:headerSize]
	switch {
	case string(h[:8]) != magic:
		return nil, fmt.Errorf("%w: %s is not a receiptd write-ahead log segment", ErrCorrupt, path)
	case binary.BigEndian.Uint32(h[24:]) != crc32.Checksum(h[:24], castagnoli):
		return nil, fmt.Errorf("%w: segment %s has a damaged header", ErrCorrupt, path)
	case binary.BigEndian.Uint64(h[8:]) != id:
		return nil, fmt.Errorf("%w: segment %s belongs to another database (log id %016x, this database's %016x)",
			ErrCorrupt, path, binary.BigEndian.Uint64(h[8:]), id)
	case binary.BigEndian.Uint64(h[16:]) != first:
		return nil, fmt.Errorf("%w: segment %s says its first record is %d, its name %d",
			ErrCorrupt, path, binary.BigEndian.Uint64(h[16:]), first)
	}
	var out []Record
	next := first
	for off := headerSize; len(data)-off >= recHeader; {
		n := int(binary.BigEndian.Uint32(data[off:]))
		if n == 0 || n > len(data)-off-recHeader {
			break
		}
		crc := binary.BigEndian.Uint32(data[off+4:])
		lsn := binary.BigEndian.Uint64(data[off+8:])
		payload := data[off+recHeader : off+recHeader+n]
		if lsn != next || recordCRC(first, data[off+8:off+16], payload) != crc {
			break
		}
		out = append(out, Record{LSN: lsn, Data: payload})
		next++
		off += recHeader + n
	}
	return out, nil
}
