package metrics

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStoreHealthReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	m := New()
	require.Nil(t, scrape(t, m.Handler())["receiptd_store_disk_full"], "nothing before WatchStore")

	var full, failed atomic.Bool
	m.WatchStore(func() (bool, bool) { return full.Load(), failed.Load() })
	fams := scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_store_disk_full"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_store_failed"))

	full.Store(true)
	fams = scrape(t, m.Handler())
	require.Equal(t, 1.0, value(t, fams, "receiptd_store_disk_full"))
	require.Equal(t, 0.0, value(t, fams, "receiptd_store_failed"))

	full.Store(false)
	failed.Store(true)
	fams = scrape(t, m.Handler())
	require.Equal(t, 0.0, value(t, fams, "receiptd_store_disk_full"))
	require.Equal(t, 1.0, value(t, fams, "receiptd_store_failed"))

	m.WatchStore(nil)
	require.Nil(t, scrape(t, m.Handler())["receiptd_store_failed"])

	var nilM *Metrics
	require.NotPanics(t, func() { nilM.WatchStore(func() (bool, bool) { return true, true }) })
}
