package salvage

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/wal"
)

// salvageFile runs Read on the file at path and returns the result with
// its entries by queueId.
func salvageFile(t *testing.T, path string) (*DB, map[string]queue.Entry) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	fi, err := f.Stat()
	require.NoError(t, err)
	db, err := Read(f, fi.Size())
	require.NoError(t, err)
	out := map[string]queue.Entry{}
	for _, e := range db.Entries() {
		out[e.QueueID] = e
	}
	return db, out
}

// pages is where an intact file keeps things, found with bbolt's own API
// (the entries bucket's root page, each page's type and element count)
// and the meta page.
type pages struct {
	ps       int
	root     uint64   // the entries bucket's root page
	leaves   []uint64 // the entries bucket's leaf pages, in key order
	count    map[uint64]int
	freelist uint64
	total    uint64
}

func locate(t *testing.T, path string) pages {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	m, ok := decodeMeta(raw)
	require.True(t, ok)
	p := pages{ps: int(m.pageSize), count: map[uint64]int{}, freelist: m.freelist, total: uint64(len(raw)) / uint64(m.pageSize)}
	// Writable, on a copy: a read-only bbolt does not load the freelist,
	// and Page needs it.
	cp := filepath.Join(t.TempDir(), "locate.db")
	copyFile(t, path, cp)
	db, err := bbolt.Open(cp, 0o600, nil)
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		p.root = uint64(tx.Bucket([]byte(keyQueue)).Bucket([]byte(keyEntries)).Root())
		for id := range p.total {
			if info, err := tx.Page(int(id)); err == nil && info != nil {
				p.count[id] = info.Count
			}
		}
		return nil
	}))
	require.NotZero(t, p.root, "the entries bucket is not inline")
	root := raw[int(p.root)*p.ps : int(p.root+1)*p.ps]
	h, els, _, ok := decodeElems(root, true)
	require.True(t, ok)
	require.Equal(t, uint16(flagBranch), h.flags, "the entries bucket's root is a branch page over its leaves")
	for _, el := range els {
		p.leaves = append(p.leaves, el.child)
	}
	return p
}

// keysOf returns the queueIds held by leaf page id of the intact file.
func keysOf(t *testing.T, raw []byte, p pages, id uint64) []string {
	t.Helper()
	_, els, _, ok := decodeElems(raw[int(id)*p.ps:], true)
	require.True(t, ok)
	var out []string
	for _, el := range els {
		out = append(out, queue.FormatID(binary.BigEndian.Uint64(el.key)))
	}
	require.Len(t, out, p.count[id], "bbolt counts the same elements")
	return out
}

// valueAt is the offset in the file of the value of element i of leaf page id.
func valueAt(raw []byte, p pages, id uint64, i int) int {
	at := int(id)*p.ps + pageHeaderSize + i*elemSize
	return at + int(le.Uint32(raw[at+4:])) + int(le.Uint32(raw[at+8:]))
}

func damage(t *testing.T, path string, fn func(raw []byte) []byte) {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, fn(raw), 0o600))
}

func zero(raw []byte, p pages, id uint64) {
	clear(raw[int(id)*p.ps : int(id+1)*p.ps])
}

// TestReadIntact: an undamaged file gives back every entry exactly as
// bbolt reads it, all through the tree.
func TestReadIntact(t *testing.T) {
	fx := build(t, t.TempDir(), plan{receipts: 300})
	for name, path := range map[string]string{"as written": fx.path, "compacted": compacted(t, fx.path)} {
		t.Run(name, func(t *testing.T) {
			db, got := salvageFile(t, path)
			require.Equal(t, fx.entries, got)
			require.Equal(t, len(fx.entries), db.FromTree)
			require.Zero(t, db.FromScan+db.Unreadable+db.Undecodable+db.BadBody+db.OrphanKeys+db.LostRanges)
			require.True(t, db.SequenceKnown)
			require.Equal(t, uint64(302), db.Sequence, "300 receipts and 2 deletes")
			require.True(t, db.FreelistOK)
		})
	}
}

// TestReadDamagedPages damages a compacted copy of a real database (one
// transaction wrote every page, so what a damaged page held is nowhere
// else) and checks exactly which entries come back.
func TestReadDamagedPages(t *testing.T) {
	fx := build(t, t.TempDir(), plan{receipts: 400})
	n := len(fx.entries)
	require.Equal(t, 402, n)
	clean := compacted(t, fx.path)
	p := locate(t, clean)
	raw, err := os.ReadFile(clean)
	require.NoError(t, err)
	require.Greater(t, len(p.leaves), 20)
	leaf := p.leaves[len(p.leaves)/2]
	leafKeys := keysOf(t, raw, p, leaf)
	first := keysOf(t, raw, p, p.leaves[3])[0]
	cut := p.total / 2
	var below int // entries on leaves wholly before the cut
	var beyond []string
	for _, id := range p.leaves {
		if id < cut {
			below += p.count[id]
		} else {
			beyond = append(beyond, keysOf(t, raw, p, id)...)
		}
	}
	tests := []struct {
		name   string
		damage func(raw []byte) []byte
		lost   []string // exactly the queueIds not recovered
		check  func(t *testing.T, db *DB)
	}{{
		// A branch holds no entry: the scan finds every leaf under it.
		name:   "zeroed branch page (the entries bucket's root)",
		damage: func(raw []byte) []byte { zero(raw, p, p.root); return raw },
		check: func(t *testing.T, db *DB) {
			require.Equal(t, 1, db.Unreadable)
			require.Equal(t, n, db.FromScan, "every entry from the scan")
		},
	}, {
		name:   "zeroed leaf page",
		damage: func(raw []byte) []byte { zero(raw, p, leaf); return raw },
		lost:   leafKeys,
		check: func(t *testing.T, db *DB) {
			require.Equal(t, 1, db.Unreadable)
			require.Equal(t, 1, db.LostRanges)
			require.Zero(t, db.FromScan, "no other copy of its entries")
			require.Equal(t, len(leafKeys)-countDeletes(fx, leafKeys), db.OrphanKeys, "their receipts' idempotency rows are orphans")
		},
	}, {
		// The freelist holds no entry and the tree does not need it.
		name:   "zeroed freelist page",
		damage: func(raw []byte) []byte { zero(raw, p, p.freelist); return raw },
		check: func(t *testing.T, db *DB) {
			require.False(t, db.FreelistOK)
			require.Equal(t, n, db.FromTree)
		},
	}, {
		// A record that does not decode is lost, never guessed.
		name: "flipped byte in a record's header",
		damage: func(raw []byte) []byte {
			raw[valueAt(raw, p, p.leaves[3], 0)+1] ^= 0xFF
			return raw
		},
		lost:  []string{first},
		check: func(t *testing.T, db *DB) { require.Equal(t, 1, db.Undecodable) },
	}, {
		// The body is kept, but never sent: its hash does not match.
		name: "flipped byte in a receipt's body",
		damage: func(raw []byte) []byte {
			_, els, _, _ := decodeElems(raw[int(leaf)*p.ps:], true)
			v := valueAt(raw, p, leaf, 1) + len(els[1].value) - 5 // in the body's last JSON string
			raw[v] ^= 0x01
			return raw
		},
		check: func(t *testing.T, db *DB) { require.Equal(t, 1, db.BadBody) },
	}, {
		// A page that does not say it is the page its parent points at is
		// not trusted, nor read by the scan.
		name: "flipped byte in a leaf page's header",
		damage: func(raw []byte) []byte {
			raw[int(leaf)*p.ps] ^= 0x01
			return raw
		},
		lost: leafKeys,
	}, {
		// Pages past the end are gone; the root and the meta's tree with
		// them, so every page left is scanned.
		name:   "truncated file",
		damage: func(raw []byte) []byte { return raw[:int(cut)*p.ps] },
		lost:   beyond,
		check:  func(t *testing.T, db *DB) { require.Equal(t, below, db.FromScan+db.FromTree) },
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "damaged.db")
			copyFile(t, clean, path)
			damage(t, path, tc.damage)
			db, got := salvageFile(t, path)
			require.Equal(t, n-len(tc.lost), len(got), "recovered")
			for _, id := range tc.lost {
				require.NotContains(t, got, id)
			}
			for id, e := range got {
				want := fx.entries[id]
				if db.BadBody == 0 {
					require.Equal(t, want, e, "recovered as it was")
				} else {
					require.Equal(t, want.IdemKey, e.IdemKey)
				}
			}
			if tc.name != "truncated file" { // the entries bucket's header is past the cut
				require.True(t, db.SequenceKnown)
				require.Equal(t, uint64(402), db.Sequence)
			}
			if tc.check != nil {
				tc.check(t, db)
			}
			t.Logf("%s: %d of %d entries recovered (%d through the tree, %d by the scan), %d unreadable pages",
				tc.name, len(got), n, db.FromTree, db.FromScan, db.Unreadable)
		})
	}
}

// countDeletes counts the delete entries among ids: they have no
// idempotency row.
func countDeletes(fx fixture, ids []string) int {
	n := 0
	for _, id := range ids {
		if fx.entries[id].Kind == queue.KindDelete {
			n++
		}
	}
	return n
}

// TestReadDamagedLeafAsWritten zeroes a leaf of the file as the queue
// left it (many transactions): bbolt's freed pages may hold older copies
// of the lost entries, which the scan then finds. Every entry recovered is
// the original or an older copy of the same receipt; at least the entries
// of other pages come back, and everything recovered from elsewhere than
// the tree comes from the lost page's range.
func TestReadDamagedLeafAsWritten(t *testing.T) {
	fx := build(t, t.TempDir(), plan{receipts: 400})
	p := locate(t, fx.path)
	raw, err := os.ReadFile(fx.path)
	require.NoError(t, err)
	leaf := p.leaves[len(p.leaves)/2]
	leafKeys := keysOf(t, raw, p, leaf)
	zero(raw, p, leaf)
	path := filepath.Join(t.TempDir(), "damaged.db")
	require.NoError(t, os.WriteFile(path, raw, 0o600))
	db, got := salvageFile(t, path)
	require.Equal(t, len(fx.entries)-len(leafKeys), db.FromTree)
	require.Equal(t, db.FromTree+db.FromScan, len(got))
	for id, e := range got {
		want := fx.entries[id]
		require.Equal(t, want.IdemKey, e.IdemKey)
		require.Equal(t, want.Body, e.Body)
		require.False(t, e.UpdatedAt.After(want.UpdatedAt), "never newer than the real one")
	}
	t.Logf("zeroed leaf of %d entries: %d found again on freed pages", len(leafKeys), db.FromScan)
}

// TestAddLogTruncatedSegment: a crash image (the database and its log as
// a kill -9 leaves them, 20 receipts acknowledged into the log and not yet
// applied) whose last segment is cut in the middle of the 11th of them:
// the database's entries and the 10 whole records come back.
func TestAddLogTruncatedSegment(t *testing.T) {
	crash := t.TempDir()
	fx := build(t, t.TempDir(), plan{receipts: 200, crashCopy: crash, unapplied: 20})
	logDir := layout.WAL(crash)
	segs, err := wal.Scan(logDir)
	require.NoError(t, err)
	last := segs[len(segs)-1]
	require.GreaterOrEqual(t, len(last.Records), 20)
	raw, err := os.ReadFile(last.Path)
	require.NoError(t, err)
	off := 32 // the segment's header
	for range len(last.Records) - 20 + 10 {
		off += 16 + int(binary.BigEndian.Uint32(raw[off:]))
	}
	require.NoError(t, os.WriteFile(last.Path, raw[:off+20], 0o600)) // in the 11th record's header and payload

	db, _ := salvageFile(t, layout.DB(crash))
	require.Equal(t, len(fx.entries)-20, db.FromTree, "the database holds what was applied")
	segs, err = wal.Scan(logDir)
	require.NoError(t, err)
	db.AddLog(segs)
	got := map[string]queue.Entry{}
	for _, e := range db.Entries() {
		got[e.QueueID] = e
	}
	require.Equal(t, 10, db.FromLog)
	require.Equal(t, len(fx.entries)-10, len(got))
	for i := 1; i <= 20; i++ {
		id := queue.FormatID(uint64(202 + i)) // after 200 receipts and 2 deletes
		if i <= 10 {
			require.Equal(t, fx.entries[id], got[id])
		} else {
			require.NotContains(t, got, id)
		}
	}
	require.Equal(t, uint64(212), db.Sequence)
}
