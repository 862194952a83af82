//go:build linux || darwin || freebsd

package fileutil

import "golang.org/x/sys/unix"

func diskSpace(dir string) (Space, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return Space{}, err
	}
	bsize := uint64(st.Bsize) // int64 on Linux, uint32 on macOS
	return Space{Free: uint64(st.Bavail) * bsize, Total: uint64(st.Blocks) * bsize}, nil
}
