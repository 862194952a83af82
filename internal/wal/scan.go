package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Segment is what Scan found in one segment file.
type Segment struct {
	Path    string
	ID      uint64   // the log id its header names (0 when the header is damaged)
	Records []Record // its valid records, from its first on, up to the first that is not valid
	Err     error    // why nothing of it could be read (a damaged header), or nil
}

// Scan reads every segment in dir, whatever database it belongs to and
// whatever was applied, for receiptd salvage, which rebuilds a database
// from what is left: unlike Open it refuses nothing and changes nothing.
// Each segment's records are read as Open reads them (a torn or stale
// record ends the segment, never read as a record), and a segment whose
// header is damaged is reported in its Err. A missing dir is no segments.
func Scan(dir string) ([]Segment, error) {
	segs, err := listSegments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]Segment, 0, len(segs))
	for _, s := range segs {
		data, err := os.ReadFile(s.path)
		if err != nil {
			return nil, fmt.Errorf("read write-ahead log segment %s: %w", s.path, err)
		}
		seg := Segment{Path: s.path}
		if len(data) >= headerSize {
			seg.ID = binary.BigEndian.Uint64(data[8:])
		}
		seg.Records, seg.Err = readSegment(s.path, data, seg.ID, s.first)
		if seg.Err != nil {
			seg.ID = 0
		}
		out = append(out, seg)
	}
	return out, nil
}
