package fleet

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// A record is one interval's samples in the buffer file: a header, then
// the payload (a snappy-compressed protobuf WriteRequest, ready to be
// concatenated with others into one request).
//
//	offset  size  field
//	0       4     payload length n, little endian
//	4       4     CRC-32C (Castagnoli) of bytes 8 .. 20+n
//	8       8     sample time, Unix milliseconds, little endian
//	16      4     number of samples in the payload
//	20      n     payload
//
// The checksum covers everything but the length and itself, so a torn
// append (a power cut in the middle of the write, or before its fsync
// reached the disk) shows as a record that does not check, and is dropped
// with everything after it when the buffer is reopened.
const recordHeader = 20

// maxPayload bounds the length a record may claim: a corrupt length must
// not make the reader allocate gigabytes. One interval of receiptd's
// series is tens of KiB.
const maxPayload = 16 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors of decodeRecord.
var (
	// errShort: the bytes end before the record does (a torn tail, or
	// the end of the data).
	errShort = errors.New("record: truncated")
	// errCorrupt: the record's length is impossible or its checksum does
	// not match.
	errCorrupt = errors.New("record: checksum or length mismatch")
)

// record is one decoded record.
type record struct {
	ts      int64  // Unix milliseconds
	samples uint32 // samples in payload
	payload []byte // aliases the decoded bytes
}

// size is the record's length on disk.
func (r record) size() int { return recordHeader + len(r.payload) }

// appendRecord appends r's encoding to dst.
func appendRecord(dst []byte, r record) []byte {
	var h [recordHeader]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(r.payload)))
	binary.LittleEndian.PutUint64(h[8:], uint64(r.ts))
	binary.LittleEndian.PutUint32(h[16:], r.samples)
	crc := crc32.Update(crc32.Checksum(h[8:], castagnoli), castagnoli, r.payload)
	binary.LittleEndian.PutUint32(h[4:], crc)
	dst = append(dst, h[:]...)
	return append(dst, r.payload...)
}

// decodeRecord decodes the record at the start of b. Its payload aliases
// b. The error is errShort or errCorrupt; a record that decodes is exactly
// what appendRecord wrote (up to a CRC-32C collision).
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeader {
		return record{}, errShort
	}
	n := binary.LittleEndian.Uint32(b[0:])
	if n > maxPayload {
		return record{}, errCorrupt
	}
	if uint64(len(b)) < uint64(recordHeader)+uint64(n) {
		return record{}, errShort
	}
	body := b[8 : recordHeader+int(n)]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return record{}, errCorrupt
	}
	return record{
		ts:      int64(binary.LittleEndian.Uint64(b[8:])),
		samples: binary.LittleEndian.Uint32(b[16:]),
		payload: b[recordHeader : recordHeader+int(n)],
	}, nil
}
