package daemon

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// identityEvery is how often identityLoop looks at the database file;
// markerEvery how often it records the newest transaction in the marker
// (store.SaveMarker: three fsyncs when anything was committed since).
const (
	identityEvery = time.Second
	markerEvery   = 10 * time.Second
)

// identityLoop checks every second that the database path still names the
// file the daemon opened. Once it does not (the file was moved, deleted or
// replaced), the store refuses every write, so nothing more is
// acknowledged (503), /readyz fails, and the log says how to recover; the
// daemon keeps running so that what the old file holds can still be
// copied out with `receiptd backup`. Every markerEvery it also records the
// newest transaction in the data directory's marker, so that an older copy
// put back in place (a backup copied over the database) is refused at the
// next start.
func (d *Daemon) identityLoop(ctx context.Context) {
	t := time.NewTicker(identityEvery)
	defer t.Stop()
	lastSave, saveFailed := time.Now(), false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Since(lastSave) >= markerEvery {
			lastSave = time.Now()
			err := d.st.SaveMarker()
			if err != nil && !saveFailed {
				d.log.Warn("cannot record the newest transaction in the data directory's marker; will retry", zap.Error(err))
			}
			saveFailed = err != nil
		}
		if err := d.st.CheckIdentity(); err != nil {
			d.api.SetReady(false)
			d.log.Error("the database file was moved, deleted or replaced while receiptd was running: "+
				"receiptd accepts no more receipts and sends nothing. To recover: while receiptd still runs, "+
				"copy what it holds with `receiptd backup FILE`; then stop receiptd, put the original file back "+
				"or run `receiptd restore FILE`, and start it again",
				zap.String("db", d.st.Path()), zap.Error(err))
			return
		}
	}
}
