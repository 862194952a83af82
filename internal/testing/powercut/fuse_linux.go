//go:build linux

package powercut

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Mounted is a Disk served at a folder. Unmount it before the Disk's next
// Mount.
type Mounted struct {
	Dir    string
	server *fuse.Server
}

// Available says why Mount cannot work here, or nil: it needs /dev/fuse
// and root (Mount mounts directly, without fusermount).
func Available() error {
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("FUSE unavailable: %w", err)
	}
	if os.Geteuid() != 0 {
		return errors.New("FUSE mount needs root (Mount mounts without fusermount)")
	}
	return nil
}

// Mount serves d at dir (an existing empty folder) until Unmount. Caches
// are off (entry and attribute timeouts of zero, no writeback cache) and
// direct I/O is not used, so mmap works and sees every write at once.
func Mount(d *Disk, dir string) (*Mounted, error) {
	zero := time.Duration(0)
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMount:       true,
			DirectMountStrict: true,
			FsName:            "powercut",
			Name:              "powercut",
			DisableXAttrs:     true,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
		RootStableAttr:  &fs.StableAttr{Ino: d.root.ino, Mode: syscall.S_IFDIR},
	}
	srv, err := fs.Mount(dir, &node{disk: d, n: d.root, born: time.Now()}, opts)
	if err != nil {
		return nil, fmt.Errorf("mount power-cut file system at %s: %w", dir, err)
	}
	return &Mounted{Dir: dir, server: srv}, nil
}

// Unmount detaches the file system and waits for its server to stop. The
// folder must not be in use (no process holding a file open).
func (m *Mounted) Unmount() error {
	if err := m.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", m.Dir, err)
	}
	m.server.Wait()
	return nil
}

// node is one Disk node as FUSE sees it.
type node struct {
	fs.Inode
	disk *Disk
	n    *Node
	born time.Time
}

var (
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeReaddirer = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeStatfser  = (*node)(nil)
)

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}

func (f *node) fill(a Attr, out *fuse.Attr) {
	out.Ino, out.Size, out.Nlink = a.Ino, uint64(a.Size), 1
	out.Blocks = (out.Size + 511) / 512
	out.Mode = a.Mode | syscall.S_IFREG
	if a.Dir {
		out.Mode, out.Nlink = a.Mode|syscall.S_IFDIR, 2
	}
	t := f.born
	out.SetTimes(&t, &t, &t)
}

func (f *node) child(ctx context.Context, k *Node, out *fuse.EntryOut) *fs.Inode {
	a := f.disk.Attr(k)
	f.fill(a, &out.Attr)
	mode := uint32(syscall.S_IFREG)
	if a.Dir {
		mode = syscall.S_IFDIR
	}
	return f.NewInode(ctx, &node{disk: f.disk, n: k, born: f.born}, fs.StableAttr{Mode: mode, Ino: a.Ino})
}

func (f *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	k, err := f.disk.Lookup(f.n, name)
	if err != nil {
		return nil, errno(err)
	}
	return f.child(ctx, k, out), 0
}

func (f *node) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	f.fill(f.disk.Attr(f.n), &out.Attr)
	return 0
}

func (f *node) Setattr(_ context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if err := f.disk.Truncate(f.n, int64(size)); err != nil {
			return errno(err)
		}
	}
	if mode, ok := in.GetMode(); ok {
		if err := f.disk.SetMode(f.n, mode); err != nil {
			return errno(err)
		}
	}
	f.fill(f.disk.Attr(f.n), &out.Attr)
	return 0
}

func (f *node) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	list, err := f.disk.List(f.n)
	if err != nil {
		return nil, errno(err)
	}
	out := make([]fuse.DirEntry, 0, len(list))
	for _, e := range list {
		mode := uint32(syscall.S_IFREG)
		if e.Dir {
			mode = syscall.S_IFDIR
		}
		out = append(out, fuse.DirEntry{Name: e.Name, Ino: e.Ino, Mode: mode})
	}
	return fs.NewListDirStream(out), 0
}

func (f *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	k, err := f.disk.Create(f.n, name, true, mode)
	if err != nil {
		return nil, errno(err)
	}
	return f.child(ctx, k, out), 0
}

func (f *node) Create(ctx context.Context, name string, _ uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	k, err := f.disk.Create(f.n, name, false, mode)
	if err != nil {
		return nil, nil, 0, errno(err)
	}
	return f.child(ctx, k, out), nil, 0, 0
}

func (f *node) Unlink(_ context.Context, name string) syscall.Errno {
	return errno(f.disk.Remove(f.n, name, false))
}

func (f *node) Rmdir(_ context.Context, name string) syscall.Errno {
	return errno(f.disk.Remove(f.n, name, true))
}

func (f *node) Rename(_ context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	const noReplace = 1 // RENAME_NOREPLACE
	if flags&^noReplace != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE and RENAME_WHITEOUT are not modelled
	}
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	return errno(f.disk.Rename(f.n, name, to.n, newName, flags&noReplace != 0))
}

// Open keeps no handle: reads and writes go to the node. No
// FOPEN_KEEP_CACHE, so the kernel drops its cached pages at each open.
func (f *node) Open(context.Context, uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if f.disk.Attr(f.n).Dir {
		return nil, 0, syscall.EISDIR
	}
	return nil, 0, 0
}

func (f *node) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := f.disk.ReadAt(f.n, dest, off)
	if err != nil {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (f *node) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	n, err := f.disk.WriteAt(f.n, data, off)
	return uint32(n), errno(err)
}

// Fsync serves fsync and fdatasync of a file and fsync of a directory:
// each makes the node durable (see Disk.Sync).
func (f *node) Fsync(context.Context, fs.FileHandle, uint32) syscall.Errno {
	return errno(f.disk.Sync(f.n))
}

func (f *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

func (f *node) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 20 // 4 GiB in 4 KiB blocks, all free: the model never fills
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<20, 1<<20
	out.Bsize, out.Frsize, out.NameLen = PageSize, PageSize, 255
	return 0
}
