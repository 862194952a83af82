package salvage

import (
	"bytes"
	"io"
)

// file reads the pages of a bbolt file.
type file struct {
	r     io.ReaderAt
	size  int64
	ps    int    // page size
	pages uint64 // pages that can be read: those the file holds, up to the meta's high-water mark
}

// maxOverflow bounds how many pages one page may span, so a damaged
// header cannot make salvage read a gigabyte: a receipt is at most 1 MiB
// (accept's body limit), which on the smallest pages bbolt writes is 256
// pages.
const maxOverflow = 1024

// read returns page id with its overflow pages, and whether it is there
// and says it is page id (a zeroed or misplaced page does not).
func (f *file) read(id uint64) ([]byte, header, bool) {
	if id < 2 || id >= f.pages {
		return nil, header{}, false
	}
	hb := make([]byte, pageHeaderSize)
	if _, err := f.r.ReadAt(hb, int64(id)*int64(f.ps)); err != nil {
		return nil, header{}, false
	}
	h, _ := decodeHeader(hb)
	if h.id != id || h.overflow > maxOverflow || id+uint64(h.overflow) >= f.pages {
		return nil, h, false
	}
	b := make([]byte, (int(h.overflow)+1)*f.ps)
	if _, err := f.r.ReadAt(b, int64(id)*int64(f.ps)); err != nil {
		return nil, h, false
	}
	return b, h, true
}

// keyRange is a range of keys of one bucket, lo inclusive, hi exclusive;
// nil means unbounded on that side.
type keyRange struct{ lo, hi []byte }

func (r keyRange) has(k []byte) bool {
	return (r.lo == nil || bytes.Compare(k, r.lo) >= 0) && (r.hi == nil || bytes.Compare(k, r.hi) < 0)
}

// walker follows bucket trees from the meta page, trusting only pages
// that decode strictly and say they are the page their parent points at.
type walker struct {
	f          *file
	seen       map[uint64]bool // pages read through a tree (their overflow included)
	unreadable int             // pages a tree points at that are damaged or missing
}

// maxDepth bounds a tree's height: bbolt's trees are a few levels deep,
// and a damaged branch must not send the walk round in circles.
const maxDepth = 32

// bucket calls leaf for every element of bucket b's leaves, in key order,
// and lost for every key range whose page could not be read.
func (w *walker) bucket(b inBucket, leaf func(elem), lost func(keyRange)) {
	if b.root != 0 {
		w.node(b.root, keyRange{}, 0, leaf, lost)
		return
	}
	_, els, _, ok := decodeElems(b.inline, true)
	h, _ := decodeHeader(b.inline)
	if !ok || h.flags != flagLeaf {
		w.unreadable++
		lost(keyRange{})
		return
	}
	for _, el := range els {
		leaf(el)
	}
}

func (w *walker) node(id uint64, r keyRange, depth int, leaf func(elem), lost func(keyRange)) {
	b, h, ok := w.f.read(id)
	var els []elem
	if ok && !w.seen[id] && depth < maxDepth {
		_, els, _, ok = decodeElems(b, true)
	} else {
		ok = false
	}
	// Keys outside the range the parent gives this page: it is not the
	// page the parent meant (a stale page in a damaged parent's place).
	for i := 0; ok && i < len(els); i++ {
		ok = r.has(els[i].key) || (i == 0 && h.flags == flagBranch)
	}
	if !ok {
		w.unreadable++
		lost(r)
		return
	}
	for p := id; p <= id+uint64(h.overflow); p++ {
		w.seen[p] = true
	}
	if h.flags == flagLeaf {
		for _, el := range els {
			leaf(el)
		}
		return
	}
	for i, el := range els {
		cr := keyRange{lo: el.key, hi: r.hi}
		if i == 0 {
			cr.lo = r.lo
		}
		if i+1 < len(els) {
			cr.hi = els[i+1].key
		}
		w.node(el.child, cr, depth+1, leaf, lost)
	}
}

// childBucket is the sub-bucket named name among els, decoded.
func childBucket(els []elem, name string) (inBucket, bool) {
	el, ok := child(els, name)
	if !ok || !el.bucket {
		return inBucket{}, false
	}
	return decodeBucket(el.value)
}

// child finds the element named name among a bucket's leaf elements.
func child(els []elem, name string) (elem, bool) {
	for _, el := range els {
		if string(el.key) == name {
			return el, true
		}
	}
	return elem{}, false
}
