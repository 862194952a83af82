//go:build unix

package datadir

import (
	"fmt"
	"os"
	"syscall"
)

// giveToDirOwner makes path belong to the owner of directory dir, so that a
// database restored by root stays readable by the service user that owns
// the data directory. Run as another user, it changes nothing: that user
// can only have made files it owns in a directory it may write.
func giveToDirOwner(path, dir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("owner of %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := os.Chown(path, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("give %s to the owner of %s: %w", path, dir, err)
	}
	return nil
}
