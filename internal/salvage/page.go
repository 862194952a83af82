package salvage

import (
	"encoding/binary"
	"hash/fnv"
)

// bbolt's file format (go.etcd.io/bbolt, internal/common: page.go,
// meta.go, bucket.go), as far as salvage reads it. bbolt writes its
// structures from memory as they are, so integers are in the machine's
// byte order: little-endian on every platform receiptd is built for
// (amd64, 386, arm64).
//
//	page header (16 bytes): id uint64 | flags uint16 | count uint16 | overflow uint32
//	branch element (16):    pos uint32 | ksize uint32 | pgid uint64      (key at element + pos)
//	leaf element (16):      flags uint32 | pos uint32 | ksize uint32 | vsize uint32
//	                        (key at element + pos, value right after it)
//	meta (after the header): magic uint32 | version uint32 | pageSize uint32 | flags uint32 |
//	                        root bucket (root pgid uint64, sequence uint64) | freelist pgid uint64 |
//	                        high-water pgid uint64 | txid uint64 | checksum uint64 (FNV-64a of the 56 bytes before)
//	bucket value:           root pgid uint64 | sequence uint64, and for an inline bucket (root 0)
//	                        a page (header and elements, id 0) right after
//	freelist page:          count pgids after the header; a count of 0xFFFF means the first
//	                        pgid is the real count
//
// A page of overflow n spans n+1 pages of the file.
const (
	pageHeaderSize = 16
	elemSize       = 16
	bucketHeader   = 16

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10

	leafBucket = 0x01 // a leaf element whose value is a bucket

	metaMagic   = 0xED0CDAED
	metaVersion = 2
	metaSize    = 64
)

var le = binary.LittleEndian

// meta is a decoded meta page.
type meta struct {
	pageSize uint32
	root     uint64 // the root bucket's page
	freelist uint64 // the freelist's page; all ones when not written (NoFreelistSync)
	pgid     uint64 // the high-water mark: pages at or after it are not in use
	txid     uint64
}

// decodeMeta decodes the meta page in b (its header first) and reports
// whether its magic, version and checksum are right.
func decodeMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize || le.Uint16(b[8:])&flagMeta == 0 {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	if le.Uint32(m[0:]) != metaMagic || le.Uint32(m[4:]) != metaVersion || le.Uint64(m[56:]) != h.Sum64() {
		return meta{}, false
	}
	return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]),
		pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// header is a page header.
type header struct {
	id       uint64
	flags    uint16
	count    uint16
	overflow uint32
}

func decodeHeader(b []byte) (header, bool) {
	if len(b) < pageHeaderSize {
		return header{}, false
	}
	return header{id: le.Uint64(b), flags: le.Uint16(b[8:]), count: le.Uint16(b[10:]), overflow: le.Uint32(b[12:])}, true
}

// elem is one element of a branch or leaf page: for a branch, the child
// page; for a leaf, the value and whether it is a bucket.
type elem struct {
	key, value []byte
	bucket     bool
	child      uint64
}

// decodeElems decodes the elements of the page in b, which holds the
// whole page (its overflow included). Strict, it reports false, with no
// elements, when the page is not a branch or leaf page, when any element
// points outside the page, or when the keys are not in ascending order:
// bbolt never writes such a page, so it is damaged and none of its
// elements is trusted. Lenient (a page found by the scan, whose every
// value is validated on its own), it skips the elements that point
// outside the page and counts them in bad. The slices point into b.
func decodeElems(b []byte, strict bool) (h header, out []elem, bad int, ok bool) {
	h, ok = decodeHeader(b)
	if !ok || (h.flags != flagBranch && h.flags != flagLeaf) {
		return h, nil, 0, false
	}
	n := int(h.count)
	if pageHeaderSize+n*elemSize > len(b) {
		if strict {
			return h, nil, 0, false
		}
		n = (len(b) - pageHeaderSize) / elemSize
	}
	out = make([]elem, 0, n)
	for i := range n {
		el, good := decodeElem(b, h.flags, pageHeaderSize+i*elemSize)
		if good && strict && len(out) > 0 && string(out[len(out)-1].key) >= string(el.key) {
			good = false
		}
		switch {
		case good:
			out = append(out, el)
		case strict:
			return h, nil, 0, false
		default:
			bad++
		}
	}
	return h, out, bad, true
}

// decodeElem decodes the element at offset at of page b.
func decodeElem(b []byte, flags uint16, at int) (elem, bool) {
	e := b[at : at+elemSize]
	var el elem
	var pos, ksize, vsize uint64
	if flags == flagBranch {
		pos, ksize = uint64(le.Uint32(e)), uint64(le.Uint32(e[4:]))
		el.child = le.Uint64(e[8:])
	} else {
		el.bucket = le.Uint32(e)&leafBucket != 0
		pos, ksize, vsize = uint64(le.Uint32(e[4:])), uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
	}
	start := uint64(at) + pos
	if pos < elemSize || ksize == 0 || start+ksize+vsize > uint64(len(b)) {
		return elem{}, false
	}
	el.key = b[start : start+ksize]
	el.value = b[start+ksize : start+ksize+vsize]
	return el, true
}

// inBucket is a bucket value's header, and its inline page when root is 0.
type inBucket struct {
	root, sequence uint64
	inline         []byte
}

func decodeBucket(v []byte) (inBucket, bool) {
	if len(v) < bucketHeader {
		return inBucket{}, false
	}
	b := inBucket{root: le.Uint64(v), sequence: le.Uint64(v[8:])}
	if b.root == 0 {
		b.inline = v[bucketHeader:]
	}
	return b, true
}

// freelistIDs decodes a freelist page (b holds it whole, overflow
// included).
func freelistIDs(b []byte) ([]uint64, bool) {
	h, ok := decodeHeader(b)
	if !ok || h.flags != flagFreelist {
		return nil, false
	}
	data := b[pageHeaderSize:]
	n, first := uint64(h.count), 0
	if h.count == 0xFFFF {
		if len(data) < 8 {
			return nil, false
		}
		n, first = le.Uint64(data), 1
	}
	if n > uint64(len(data)/8-first) {
		return nil, false
	}
	ids := make([]uint64, n)
	for i := range ids {
		ids[i] = le.Uint64(data[(first+i)*8:])
	}
	return ids, true
}
