package daemon

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// defaultMarkerEvery is how long after a commit identityLoop records the
// newest transaction in the data directory's marker (store.SaveMarker:
// three fsyncs) and looks at the database file. New gives it to every
// Daemon as Daemon.markerEvery, which tests shorten per daemon.
const defaultMarkerEvery = 10 * time.Second

// lookEvery is how often identityLoop looks at the database file when
// neither a commit nor GET /readyz has: a file moved while the daemon is
// idle and nobody asks is in the log (and receiptd_store_failed) within a
// minute, at the cost of one wake-up a minute.
const lookEvery = time.Minute

// identityLoop stops the daemon's acknowledgements for good once the
// database path no longer names the file the daemon opened (it was moved,
// deleted or replaced). The store refuses every write from then on: each
// commit looks at the file when its last look is a second old, and so
// does each GET /readyz, so nothing more is acknowledged (503) and
// /readyz fails; this loop says in the log how to recover as soon as
// either finds it (the store's Moved channel). The daemon keeps running so
// that what the old file holds can still be copied out with `receiptd
// backup`. d.markerEvery after a commit it records the newest transaction
// in the data directory's marker, so that an older copy put back in place
// (a backup copied over the database) is refused at the next start.
// While nothing is committed its only timer is lookEvery's.
func (d *Daemon) identityLoop(ctx context.Context) {
	var (
		moved, committed = d.st.Moved(), d.st.Committed()
		save             = time.NewTimer(d.markerEvery)
		saveC            <-chan time.Time // nil while nothing waits to be saved
		saveFailed       bool
	)
	save.Stop()
	defer save.Stop()
	look := time.NewTicker(lookEvery)
	defer look.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-look.C:
			_ = d.st.CheckIdentity() // closes moved when it finds the file gone
		case <-committed:
			if saveC == nil {
				save.Reset(d.markerEvery)
				saveC = save.C
			}
		case <-saveC:
			saveC = nil
			err := d.st.SaveMarker()
			if err != nil && !saveFailed {
				d.log.Warn("cannot record the newest transaction in the data directory's marker; will retry", zap.Error(err))
			}
			if saveFailed = err != nil; saveFailed {
				save.Reset(d.markerEvery)
				saveC = save.C
			}
			_ = d.st.CheckIdentity() // closes moved when it finds the file gone
		case <-moved:
			d.api.SetReady(false)
			d.log.Error("the database file was moved, deleted or replaced while receiptd was running: "+
				"receiptd accepts no more receipts and sends nothing. To recover: while receiptd still runs, "+
				"copy what it holds with `receiptd backup FILE`; then stop receiptd, put the original file back "+
				"or run `receiptd restore FILE`, and start it again",
				zap.String("db", d.st.Path()), zap.Error(d.st.Err()))
			return
		}
	}
}
