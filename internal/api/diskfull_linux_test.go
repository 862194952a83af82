//go:build linux

package api_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

const diskFullEnv = "RECEIPTD_API_DISKFULL_DB"

// TestDiskFull runs TestDiskFullChild in a subprocess whose file size limit
// (RLIMIT_FSIZE) is lowered, so the database cannot grow (EFBIG, the same
// path as ENOSPC) without root or a tiny filesystem.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	path, stored := storetest.RunDiskFullChild(t, "TestDiskFullChild", diskFullEnv, "DISKFULL-OK accepted")

	// Reopened, the file is consistent and holds exactly the acknowledged receipts.
	st := storetest.OpenPath(t, path)
	require.NoError(t, st.Check())
	q, err := queue.Open(context.Background(), st, queue.Options{})
	require.NoError(t, err)
	counts, err := q.Counts()
	require.NoError(t, err)
	require.Equal(t, stored+1, counts[queue.StateQueued], "every 2xx, and the one accepted after space came back")
}

func TestDiskFullChild(t *testing.T) {
	path := storetest.ChildValue(t, diskFullEnv)
	// A mapping no larger than the file makes bbolt grow the file by what
	// each commit needs rather than in 16 MiB steps, so the limit below bites
	// at once.
	st, err := store.Open(path, store.Options{InitialMmapSize: -1})
	require.NoError(t, err)
	q, err := queue.Open(context.Background(), st, queue.Options{})
	require.NoError(t, err)
	e := &env{t: t, st: st, q: q}
	e.srv = api.New(api.Deps{Store: st, Queue: q}, api.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- e.srv.Serve(ctx, ln) }()

	// The limit leaves room for small receipts only: a receipt with 900 KiB
	// of extra fields cannot be stored.
	lift := storetest.LimitFileGrowth(t, path, 512<<10)

	pad := strings.Repeat("p", 900<<10)
	post := func(i int, pad string) resp {
		body := strings.Replace(testkit.Receipt(fmt.Sprintf("%06d", i)), `"totalVat":1`, `"totalVat":1,"pad":"`+pad+`"`, 1)
		return e.do(http.MethodPost, "/rest/receipt", body)
	}
	accepted := 0
	for i := range 3 {
		require.Equal(t, http.StatusAccepted, post(i, "").code)
		accepted++
	}
	r := post(100, pad)
	require.Equal(t, http.StatusInsufficientStorage, r.code, "%s", r.body)
	require.Empty(t, r.h.Get(api.HeaderQueueID), "no 2xx, no queueId")
	require.Contains(t, r.json(t)["message"], "disk full")
	counts, err := q.Counts()
	require.NoError(t, err)
	require.Equal(t, accepted, counts[queue.StateQueued], "nothing of the refused receipt stored")
	require.Equal(t, http.StatusInsufficientStorage, post(100, pad).code, "still full")
	page := string(e.do(http.MethodGet, "/", "").body)
	require.Contains(t, page, "The disk is full: new receipts cannot be stored", "the status page leads with it")
	require.Contains(t, page, "df -h "+filepath.Dir(path))

	lift()
	require.Equal(t, http.StatusAccepted, post(100, pad).code, "space is back: the same receipt is taken")
	require.NotContains(t, string(e.do(http.MethodGet, "/", "").body), "The disk is full", "and the page says so no more")
	cancel()
	require.NoError(t, <-served)
	require.NoError(t, st.Close())
	fmt.Printf("DISKFULL-OK accepted=%d\n", accepted)
}
