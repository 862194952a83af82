package datadir

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/store"
)

// build writes a new database at tmp, beside the data directory's own:
// it removes what an earlier op killed midway left there, lets write make
// the file (returning its new identity and newest transaction, for the
// marker), and gives it to the owner of dir. On failure tmp is removed.
func build(tmp, dir string, write func() (id string, tx uint64, err error)) (string, uint64, error) {
	_ = os.Remove(tmp)
	id, tx, err := write()
	if err == nil {
		err = giveToDirOwner(tmp, dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", 0, err
	}
	return id, tx, nil
}

// newIdentity gives the new database st (made by build's write) an
// identity of its own and closes it; it returns the id and the file's
// newest transaction, for the marker swapIn writes.
func newIdentity(ctx context.Context, op string, st *store.Store) (string, uint64, error) {
	id := store.NewID()
	if err := st.SetID(ctx, id); err != nil {
		return "", 0, fmt.Errorf("%s: %w", op, err)
	}
	tx := st.TxID()
	if err := st.Close(); err != nil {
		return "", 0, fmt.Errorf("%s: %w", op, err)
	}
	return id, tx, nil
}

// aside is a path of the data directory that a swap keeps under a dated
// name, and where it went ("" when there was nothing at path).
type aside struct {
	path string
	kept *string
}

// swapIn puts the new database tmp (made by build) in place as the data
// directory's: each existing path of keep is set aside under its name and
// stamp, tmp renamed to the database, and the marker of id and tx written
// and given to the directory's owner. Cut short, it leaves a data
// directory whose database is missing or replaced, refused at start, and
// op can be run again.
func swapIn(op, dir, tmp, id string, tx uint64, stamp string, keep ...aside) error {
	for _, k := range keep {
		if _, err := os.Stat(k.path); err == nil {
			*k.kept = k.path + stamp
			if err := fileutil.Rename(k.path, *k.kept); err != nil {
				return fmt.Errorf("%s: keep %s: %w", op, k.path, err)
			}
		}
	}
	if err := fileutil.Rename(tmp, layout.DB(dir)); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := store.WriteMarker(dir, id, tx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := giveToDirOwner(layout.Marker(dir), dir); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// Init is `run -init`: store.InitDir, and when that makes a new database,
// the write-ahead log of the lost one is set aside (it belongs to that
// database, and would be refused beside the new one).
func Init(dir string) error {
	created, err := store.InitDir(dir, store.Options{})
	if err != nil || !created {
		return err
	}
	logDir := layout.WAL(dir)
	if _, err := os.Stat(logDir); err != nil {
		return nil
	}
	if err := fileutil.Rename(logDir, logDir+layout.KeptSuffix(layout.BeforeInit, time.Now())); err != nil {
		return fmt.Errorf("init: set the lost database's write-ahead log aside: %w", err)
	}
	return nil
}
