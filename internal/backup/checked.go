package backup

import (
	"context"
	"fmt"
	"os"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
)

// WriteChecked writes a copy of a receiptd database to path so that only
// a copy that passed its check ever has that name: write fills a new
// temporary file beside path (temp; "" means path + ".tmp") and returns
// how many entries it copied, or -1 when it cannot know; the file is
// fsynced and closed, then opened read-only, walked page by page (bbolt's
// consistency check) and, with a count, its entries counted against it
// (queue.CheckCopy); only then is it renamed over path and the directory
// fsynced (fileutil.Replace). A copy that fails, or whose check ctx ended
// first, is removed, and path keeps what it held. A directory that cannot
// be fsynced (some network and FAT mounts a copy goes to) is no error.
//
// It is the one way a copy of the database is written: the scheduled
// snapshots (Scheduler) and `receiptd backup` (datadir.Backup) both use
// it. write's own error is returned as it is.
func WriteChecked(ctx context.Context, path, temp string, write func(f *os.File) (entries int, err error)) error {
	want := -1
	return fileutil.Replace(path, func(f *os.File) error {
		var err error
		want, err = write(f)
		return err
	}, fileutil.ReplaceOptions{Temp: temp, DirSyncOptional: true, Check: func(tmp string) error {
		// The check walks the whole copy and does not watch ctx: skip it
		// at shutdown rather than hold the stop up.
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := check(tmp, want); err != nil {
			return fmt.Errorf("check the copy: %w", err)
		}
		return nil
	}})
}

// check opens the copy at path read-only, walks every page, and, when want
// is not negative, counts its entries against want. Its errors name path.
func check(path string, want int) error {
	st, err := store.OpenReadOnly(path)
	if err != nil {
		return err
	}
	err = st.Check()
	if err == nil && want >= 0 {
		err = queue.CheckCopy(st, want)
	}
	if cerr := st.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", path, cerr)
	}
	return err
}
