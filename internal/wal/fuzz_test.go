package wal

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzReadSegment feeds the segment reader any bytes a damaged disk could
// hold: it never panics, and whatever it returns is a run of records
// numbered from the segment's first LSN, each matching its checksum.
func FuzzReadSegment(f *testing.F) {
	const id, first = 7, 100
	good := encodeHeader(id, first)
	for i := range 3 {
		good = appendRecord(good, first, first+uint64(i), bytes.Repeat([]byte{byte('a' + i)}, 10*i+1))
	}
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add(append(bytes.Clone(good), make([]byte, 64)...))
	f.Add(encodeHeader(id, first))
	f.Add([]byte("RDWAL001"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := readSegment("fuzz.wal", data, id, first)
		if err != nil {
			if recs != nil {
				t.Fatalf("records %v with error %v", recs, err)
			}
			return
		}
		off := headerSize
		for i, r := range recs {
			if r.LSN != first+uint64(i) {
				t.Fatalf("record %d has LSN %d", i, r.LSN)
			}
			rec := appendRecord(nil, first, r.LSN, r.Data)
			if !bytes.Equal(data[off:off+len(rec)], rec) {
				t.Fatalf("record %d is not what the bytes hold", i)
			}
			if binary.BigEndian.Uint32(rec) == 0 {
				t.Fatalf("record %d has length 0", i)
			}
			off += len(rec)
		}
	})
}
