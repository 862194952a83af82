package powercut

import (
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"syscall"
)

// PageSize is the unit of data the Disk tracks: a write dirties the pages it
// touches, and fsync makes those pages durable.
const PageSize = 4096

// Errors, as the errno FUSE hands to the program.
var (
	errNotExist = syscall.ENOENT
	errExist    = syscall.EEXIST
	errNotDir   = syscall.ENOTDIR
	errIsDir    = syscall.EISDIR
	errNotEmpty = syscall.ENOTEMPTY
	errOff      = syscall.EIO // the power is off
	errInval    = syscall.EINVAL
)

// Disk is a tree of files and directories held in memory in two versions:
// the current one and the durable one (see the package comment). Its
// methods are safe for concurrent use; one lock serialises them, which is
// what a single-disk test needs.
type Disk struct {
	mu      sync.Mutex
	root    *Node
	nextIno uint64
	off     bool
	stats   Stats
	lastCut Stats         // what the cut that turned the power off dropped
	armAt   uint64        // Writes count at which the power fails; 0: not armed
	armed   chan struct{} // closed when the armed cut happens
	keep    *rand.Rand    // the next cut keeps some unsynced writes; nil: none
}

// Stats counts what programs did to a Disk and what power cuts dropped.
type Stats struct {
	Writes        uint64 // write calls
	FileSyncs     uint64 // fsync/fdatasync of a file
	DirSyncs      uint64 // fsync of a directory
	Cuts          uint64 // power cuts
	UnsyncedPages uint64 // pages with unsynced writes at a cut
	UnsyncedSizes uint64 // files with an unsynced size change at a cut
	UnsyncedDirs  uint64 // directories with unsynced entry changes at a cut
}

// Node is a file or a directory of a Disk.
type Node struct {
	ino  uint64
	dir  bool
	mode uint32 // permission bits

	// Files: data now and durable, and the pages changed since the last
	// fsync (including pages cut off by a truncation).
	cur, dur pages
	dirty    map[int64]bool

	// Directories: entries now and durable.
	kids, durKids map[string]*Node
}

type pages struct {
	size int64
	p    map[int64][]byte // page index → PageSize bytes; absent is zeros
}

func (p pages) clone() pages {
	c := pages{size: p.size, p: make(map[int64][]byte, len(p.p))}
	for i, b := range p.p {
		c.p[i] = append([]byte(nil), b...)
	}
	return c
}

// trim zeroes what lies past the size, so that growing the file later
// reads zeros there.
func (p pages) trim() {
	last := (p.size + PageSize - 1) / PageSize
	for i := range p.p {
		if i >= last {
			delete(p.p, i)
		}
	}
	if in := p.size % PageSize; in != 0 {
		if b, ok := p.p[p.size/PageSize]; ok {
			clear(b[in:])
		}
	}
}

// NewDisk returns an empty Disk whose root directory is durable.
func NewDisk() *Disk {
	d := &Disk{nextIno: 1}
	d.root = d.newNode(true, 0o755)
	return d
}

func (d *Disk) newNode(dir bool, mode uint32) *Node {
	d.nextIno++
	n := &Node{ino: d.nextIno, dir: dir, mode: mode & 0o7777}
	if dir {
		n.kids, n.durKids = map[string]*Node{}, map[string]*Node{}
	} else {
		n.cur, n.dur = pages{p: map[int64][]byte{}}, pages{p: map[int64][]byte{}}
		n.dirty = map[int64]bool{}
	}
	return n
}

// Root is the root directory.
func (d *Disk) Root() *Node { return d.root }

// Stats returns the counters so far.
func (d *Disk) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// Attr describes a node as it is now.
type Attr struct {
	Ino  uint64
	Dir  bool
	Mode uint32 // permission bits
	Size int64
}

// Attr returns n's attributes.
func (d *Disk) Attr(n *Node) Attr {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := Attr{Ino: n.ino, Dir: n.dir, Mode: n.mode}
	if !n.dir {
		a.Size = n.cur.size
	}
	return a
}

// SetMode changes n's permission bits (not modelled as volatile).
func (d *Disk) SetMode(n *Node, mode uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return errOff
	}
	n.mode = mode & 0o7777
	return nil
}

// PowerOff is the power cut: every file's data and size and every
// directory's entries go back to their last fsync, and every later
// operation fails with EIO until PowerOn. It returns what the cut dropped
// (if the power is already off, what the cut that turned it off dropped).
func (d *Disk) PowerOff() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.off {
		d.powerOffLocked()
	}
	return d.lastCut
}

// PowerOffAtWrite arms a power cut that happens during the n-th write from
// now (n ≥ 1): that write fails with EIO and is lost with everything else
// unsynced. The channel is closed once the cut has happened. It lands the
// cut inside a commit, between its writes and its fsync, which a cut at a
// random time mostly misses.
func (d *Disk) PowerOffAtWrite(n uint64) <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.armAt, d.armed = d.stats.Writes+max(n, 1), make(chan struct{})
	return d.armed
}

// KeepAtNextCut makes the next cut keep a random part of what is unsynced,
// as a disk with a volatile write cache may have written any of it, in any
// order, before the power went: each unsynced 512-byte sector, each
// unsynced size change and each directory's unsynced entry changes (as a
// whole, as a journal commits them) survive with probability 1/2, drawn
// from rng. Without it a cut keeps nothing unsynced.
func (d *Disk) KeepAtNextCut(rng *rand.Rand) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.keep = rng
}

func (d *Disk) powerOffLocked() {
	before := d.stats
	d.off = true
	d.stats.Cuts++
	d.revert(d.root, map[*Node]bool{})
	d.keep = nil
	d.lastCut = Stats{
		Cuts:          1,
		UnsyncedPages: d.stats.UnsyncedPages - before.UnsyncedPages,
		UnsyncedSizes: d.stats.UnsyncedSizes - before.UnsyncedSizes,
		UnsyncedDirs:  d.stats.UnsyncedDirs - before.UnsyncedDirs,
	}
	if d.armed != nil {
		close(d.armed)
		d.armed, d.armAt = nil, 0
	}
}

// revert restores n (and, for a directory, everything durably reachable
// from it) to its durable version, after letting the cut keep part of the
// unsynced changes (KeepAtNextCut). Nodes no longer reachable are gone.
func (d *Disk) revert(n *Node, seen map[*Node]bool) {
	if seen[n] {
		return
	}
	seen[n] = true
	if !n.dir {
		d.stats.UnsyncedPages += uint64(len(n.dirty))
		if n.cur.size != n.dur.size {
			d.stats.UnsyncedSizes++
		}
		if d.keep != nil {
			d.keepSome(n)
		}
		n.cur, n.dirty = n.dur.clone(), map[int64]bool{}
		return
	}
	if !maps.Equal(n.kids, n.durKids) {
		d.stats.UnsyncedDirs++
		if d.keep != nil && d.keep.IntN(2) == 0 {
			n.durKids = maps.Clone(n.kids)
		}
	}
	n.kids = maps.Clone(n.durKids)
	for _, name := range slices.Sorted(maps.Keys(n.kids)) { // sorted: a seeded cut repeats
		d.revert(n.kids[name], seen)
	}
}

// sector is the unit a partial cut keeps or drops: a disk writes 512-byte
// sectors whole, but a 4 KiB page may be torn between them.
const sector = 512

// keepSome copies a random part of file n's unsynced changes into its
// durable version.
func (d *Disk) keepSome(n *Node) {
	for _, i := range slices.Sorted(maps.Keys(n.dirty)) { // sorted: a seeded cut repeats
		p, ok := n.cur.p[i]
		if !ok { // cut off by a truncation: the page goes or stays whole
			if d.keep.IntN(2) == 0 {
				delete(n.dur.p, i)
			}
			continue
		}
		dp, ok := n.dur.p[i]
		if !ok {
			dp = make([]byte, PageSize)
		}
		for s := 0; s < PageSize; s += sector {
			if d.keep.IntN(2) == 0 {
				copy(dp[s:s+sector], p[s:s+sector])
			}
		}
		n.dur.p[i] = dp
	}
	if d.keep.IntN(2) == 0 {
		n.dur.size = n.cur.size
	}
	n.dur.trim()
}

// PowerOn lets operations through again, on what survived the cut.
func (d *Disk) PowerOn() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.off, d.lastCut = false, Stats{}
}

// Sync makes n durable: a file's data and size, or a directory's entries
// (not the entries' own contents).
func (d *Disk) Sync(n *Node) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return errOff
	}
	if n.dir {
		d.stats.DirSyncs++
		n.durKids = maps.Clone(n.kids)
		return nil
	}
	d.stats.FileSyncs++
	for i := range n.dirty {
		if b, ok := n.cur.p[i]; ok {
			n.dur.p[i] = append([]byte(nil), b...)
		} else {
			delete(n.dur.p, i)
		}
	}
	n.dur.size = n.cur.size
	n.dirty = map[int64]bool{}
	return nil
}

// dirErrLocked is the refusal of a directory operation on dir: the power
// is off, or dir is not a directory.
func (d *Disk) dirErrLocked(dir *Node) error {
	if d.off {
		return errOff
	}
	if !dir.dir {
		return errNotDir
	}
	return nil
}

// Lookup returns the entry name of directory dir.
func (d *Disk) Lookup(dir *Node, name string) (*Node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.dirErrLocked(dir); err != nil {
		return nil, err
	}
	k, ok := dir.kids[name]
	if !ok {
		return nil, errNotExist
	}
	return k, nil
}

// Entry is one name in a directory listing.
type Entry struct {
	Name string
	Ino  uint64
	Dir  bool
}

// List returns the entries of directory dir, sorted by name.
func (d *Disk) List(dir *Node) ([]Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.dirErrLocked(dir); err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(dir.kids))
	for name, k := range dir.kids {
		out = append(out, Entry{Name: name, Ino: k.ino, Dir: k.dir})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Create adds a new empty file or directory called name to dir.
func (d *Disk) Create(dir *Node, name string, isDir bool, mode uint32) (*Node, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.dirErrLocked(dir); err != nil {
		return nil, err
	}
	if _, ok := dir.kids[name]; ok {
		return nil, errExist
	}
	n := d.newNode(isDir, mode)
	dir.kids[name] = n
	return n, nil
}

// Remove deletes name from dir: a file (isDir false) or an empty
// directory (isDir true).
func (d *Disk) Remove(dir *Node, name string, isDir bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return errOff
	}
	k, ok := dir.kids[name]
	switch {
	case !ok:
		return errNotExist
	case isDir && !k.dir:
		return errNotDir
	case !isDir && k.dir:
		return errIsDir
	case isDir && len(k.kids) > 0:
		return errNotEmpty
	}
	delete(dir.kids, name)
	return nil
}

// Rename moves name in dir to newName in newDir, replacing a file there
// (or an empty directory, if the moved node is a directory) unless
// noReplace is set.
func (d *Disk) Rename(dir *Node, name string, newDir *Node, newName string, noReplace bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.off {
		return errOff
	}
	k, ok := dir.kids[name]
	if !ok {
		return errNotExist
	}
	if old, ok := newDir.kids[newName]; ok {
		switch {
		case old == k:
			return nil
		case noReplace:
			return errExist
		case k.dir && !old.dir:
			return errNotDir
		case !k.dir && old.dir:
			return errIsDir
		case old.dir && len(old.kids) > 0:
			return errNotEmpty
		}
	}
	if k.dir && d.contains(k, newDir) {
		return errInval
	}
	delete(dir.kids, name)
	newDir.kids[newName] = k
	return nil
}

// contains reports whether n is dir or below it.
func (d *Disk) contains(dir, n *Node) bool {
	if dir == n {
		return true
	}
	for _, k := range dir.kids {
		if k.dir && d.contains(k, n) {
			return true
		}
	}
	return false
}
