package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

// blockFirstCommit starts an Update whose fn waits for release, so callers
// arriving meanwhile are gathered into the next group.
func blockFirstCommit(t *testing.T, s *store.Store) (release func(), done <-chan error) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- s.Update(context.Background(), func(tx *bbolt.Tx) error {
			select {
			case <-entered:
			default:
				close(entered)
			}
			<-gate
			return putTx(tx, "first", "1")
		})
	}()
	<-entered
	return func() { close(gate) }, errc
}

// fillWriter fills a store with 256 KiB values, one commit each, counting
// the commits that succeeded: the disk-full tests' acknowledged writes.
type fillWriter struct {
	s      *store.Store
	stored int
}

func (w *fillWriter) write() error {
	big := strings.Repeat("r", 256<<10)
	err := w.s.Update(context.Background(), func(tx *bbolt.Tx) error {
		return putTx(tx, fmt.Sprintf("k%05d", w.stored), big)
	})
	if err == nil {
		w.stored++
	}
	return err
}

func putTx(tx *bbolt.Tx, key, value string) error {
	b, err := tx.CreateBucketIfNotExists(testBucket)
	if err != nil {
		return err
	}
	return b.Put([]byte(key), []byte(value))
}

// startWriters starts n concurrent Update calls and returns their results.
func startWriters(s *store.Store, n int, fn func(i int) func(tx *bbolt.Tx) error) []chan error {
	out := make([]chan error, n)
	for i := range n {
		out[i] = make(chan error, 1)
		go func() { out[i] <- s.Update(context.Background(), fn(i)) }()
	}
	return out
}

func TestGroupCommitSharesOneCommit(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	base := s.Stats()
	release, first := blockFirstCommit(t, s)
	const n = 40
	var started sync.WaitGroup
	started.Add(n)
	results := startWriters(s, n, func(i int) func(tx *bbolt.Tx) error {
		started.Done()
		return func(tx *bbolt.Tx) error { return putTx(tx, fmt.Sprint("k", i), "v") }
	})
	started.Wait()
	waitQueued(t, s, n)
	release()
	require.NoError(t, <-first)
	for _, r := range results {
		require.NoError(t, <-r)
	}
	st := s.Stats()
	require.Equal(t, uint64(n+1), st.Updates-base.Updates)
	require.Equal(t, uint64(2), st.Commits-base.Commits, "the blocked commit, then all %d waiters in one", n)
	for i := range n {
		require.Equal(t, "v", get(t, s, fmt.Sprint("k", i)))
	}
}

func TestGroupCommitFailingFnDoesNotSinkTheGroup(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	release, first := blockFirstCommit(t, s)
	boom := errors.New("boom")
	results := startWriters(s, 6, func(i int) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error {
			if err := putTx(tx, fmt.Sprint("k", i), "v"); err != nil {
				return err
			}
			switch i {
			case 2:
				return boom
			case 4:
				panic("fn panicked")
			}
			return nil
		}
	})
	waitQueued(t, s, 6)
	release()
	require.NoError(t, <-first)
	for i, r := range results {
		err := <-r
		switch i {
		case 2:
			require.ErrorIs(t, err, boom)
			require.Empty(t, get(t, s, "k2"), "a failed fn's writes are rolled back")
		case 4:
			require.ErrorContains(t, err, "panicked")
			require.Empty(t, get(t, s, "k4"))
		default:
			require.NoError(t, err)
			require.Equal(t, "v", get(t, s, fmt.Sprint("k", i)))
		}
	}
}

func TestUpdateWithCancelledContextStoresNothing(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := s.Update(ctx, func(tx *bbolt.Tx) error { return putTx(tx, "k", "v") })
	require.ErrorIs(t, err, context.Canceled)
	require.Empty(t, get(t, s, "k"))

	// Cancelled while waiting for the commit in flight: dropped from the group.
	release, first := blockFirstCommit(t, s)
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Update(ctx2, func(tx *bbolt.Tx) error { return putTx(tx, "late", "v") }) }()
	waitQueued(t, s, 1)
	cancel2()
	release()
	require.NoError(t, <-first)
	require.ErrorIs(t, <-errc, context.Canceled)
	require.Empty(t, get(t, s, "late"))
}

func TestConcurrentUpdatesAllDurable(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/receiptd.db"
	s := storetest.OpenPath(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, 16*20)
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				errs <- s.Update(context.Background(), func(tx *bbolt.Tx) error {
					return putTx(tx, fmt.Sprintf("w%d-%d", w, i), "v")
				})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	s2 := storetest.OpenPath(t, path)
	for w := range 16 {
		for i := range 20 {
			require.Equal(t, "v", get(t, s2, fmt.Sprintf("w%d-%d", w, i)))
		}
	}
}

func waitQueued(t *testing.T, s *store.Store, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.Queued() >= n }, 10*time.Second, time.Millisecond)
}

// Fail refuses every later write as a failed commit does, names the
// failure in Err and Health, keeps the first failure, and reads still work.
func TestFailRefusesEveryLaterWrite(t *testing.T) {
	t.Parallel()
	s := storetest.Open(t)
	require.NoError(t, s.Writable())
	s.Fail(errors.New("flush of the write-ahead log: input/output error"))
	s.Fail(errors.New("a later failure"))
	err := s.Update(context.Background(), func(*bbolt.Tx) error { return nil })
	require.ErrorIs(t, err, store.ErrFailed)
	require.ErrorContains(t, err, "input/output error", "the first failure stays")
	require.ErrorIs(t, s.Writable(), store.ErrFailed)
	require.ErrorIs(t, s.Err(), store.ErrFailed)
	require.Contains(t, s.Health().Failed, "input/output error")
	require.NoError(t, s.View(func(*bbolt.Tx) error { return nil }), "reads still work, for a rescue")
}
