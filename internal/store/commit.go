package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/fileutil"
	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// call is one Update waiting for a commit.
type call struct {
	ctx  context.Context
	fn   func(tx *bbolt.Tx) error
	done chan error // capacity 1: the result, or errLead
}

// errLead tells a waiting caller that it now runs the next group.
var errLead = errors.New("store: lead the next group")

// errFnFailed aborts a group's transaction after one fn failed.
var errFnFailed = errors.New("store: an update function failed")

// Update runs fn in a read-write transaction and returns nil only once the
// change is fsynced.
//
// Group commit: concurrent Update calls share one bbolt commit (one fsync of
// the data pages, one of the meta page). A caller that finds no commit in
// flight commits at once, with no wait for company; callers arriving while a
// commit is in flight are gathered into the next one, which one of them
// runs. If fn returns an error, that error is returned to its caller alone
// and the group is re-run without it, so fn MAY RUN MORE THAN ONCE and must
// not have effects outside tx (assign results to variables, not channels).
// A panic in fn is returned as an error to its caller.
//
// ctx is checked before fn joins a commit; once its commit has begun, Update
// waits for the result, so a nil or non-nil return is always definitive.
// Errors: ErrDiskFull, ErrFailed, ErrClosed, ctx's error, or fn's error.
func (s *Store) Update(ctx context.Context, fn func(tx *bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("update %s: %w", s.path, err)
	}
	c := &call{ctx: ctx, fn: fn, done: make(chan error, 1)}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return fmt.Errorf("update %s: %w", s.path, ErrClosed)
	case s.failed != nil:
		err := s.failed
		s.mu.Unlock()
		return err
	}
	s.pending = append(s.pending, c)
	lead := !s.leading
	s.leading = true
	s.mu.Unlock()
	for {
		if lead {
			s.runNextGroup()
		}
		err := <-c.done
		if err != errLead {
			return err
		}
		lead = true
	}
}

// runNextGroup commits the oldest pending calls (the leader is among them),
// then hands the lead to the first caller still waiting, if any.
func (s *Store) runNextGroup() {
	s.mu.Lock()
	n := min(len(s.pending), s.maxGroup)
	group := make([]*call, n)
	copy(group, s.pending)
	s.pending = s.pending[n:]
	s.mu.Unlock()

	s.commitGroup(group)

	s.mu.Lock()
	if len(s.pending) > 0 {
		s.pending[0].done <- errLead
	} else {
		s.leading = false
	}
	s.mu.Unlock()
}

// commitGroup runs every fn of group in one transaction and delivers each
// caller's result on its done channel.
func (s *Store) commitGroup(group []*call) {
	live := group[:0:0]
	for _, c := range group {
		if err := c.ctx.Err(); err != nil {
			c.done <- fmt.Errorf("update %s: %w", s.path, err)
			continue
		}
		live = append(live, c)
	}
	if len(live) > 0 {
		if err := s.identityBeforeCommit(); err != nil {
			for _, c := range live {
				c.done <- err
			}
			return
		}
	}
	for len(live) > 0 {
		failed, fnErr := -1, error(nil)
		start := time.Now()
		txid := 0
		err := s.db.Update(func(tx *bbolt.Tx) error {
			for i, c := range live {
				if err := runFn(c.fn, tx); err != nil {
					failed, fnErr = i, err
					return errFnFailed
				}
			}
			txid = tx.ID()
			return nil
		})
		if failed >= 0 && errors.Is(err, errFnFailed) {
			live[failed].done <- fnErr
			live = append(live[:failed:failed], live[failed+1:]...)
			continue
		}
		err = s.commitError(err)
		if err == nil {
			s.lastTx.Store(uint64(txid)) // durable: Update returned after the fsyncs
			s.commits.Add(1)
			s.updates.Add(uint64(len(live)))
			select {
			case s.committed <- struct{}{}:
			default:
			}
			if s.onCommit != nil {
				s.onCommit(time.Since(start), len(live))
			}
		}
		for _, c := range live {
			c.done <- err
		}
		return
	}
}

// Fail makes the Store refuse every later write with err, as a commit
// that failed does (ErrFailed, added to err when it is not one already),
// until it is closed and opened again. It is for what is kept beside the
// database and written with it (the queue's write-ahead log): a failure
// there leaves the same doubt about what is acknowledged, and every
// reader of Err, Writable and Health then tells it the same way. The
// first failure stays.
func (s *Store) Fail(err error) {
	if !errors.Is(err, ErrFailed) {
		err = fmt.Errorf("update %s: %w: %w", s.path, ErrFailed, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed == nil {
		s.failed = err
	}
}

// Writable returns the error an Update would now fail with before it ran
// anything (ErrClosed, ErrFailed, ErrMoved), looking at the file as a
// commit does when the last look is a second old: for writers that make
// receipts durable elsewhere (the queue's write-ahead log), which must
// stop acknowledging as soon as the database stops taking writes.
func (s *Store) Writable() error {
	s.mu.Lock()
	closed, failed := s.closed, s.failed
	s.mu.Unlock()
	switch {
	case closed:
		return fmt.Errorf("update %s: %w", s.path, ErrClosed)
	case failed != nil:
		return failed
	}
	return s.identityBeforeCommit()
}

// identityStale is how old the last identity check may be when a commit
// begins.
const identityStale = time.Second

// identityBeforeCommit runs CheckIdentity when the last check by a commit
// is identityStale old or more: one stat a second at most under load.
func (s *Store) identityBeforeCommit() error {
	now := time.Now().UnixNano()
	if now-s.identityAt.Load() < int64(identityStale) {
		return nil
	}
	s.identityAt.Store(now)
	return s.CheckIdentity()
}

func runFn(fn func(tx *bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("update function panicked: %v", r)
		}
	}()
	return fn(tx)
}

// commitError classifies an error from bbolt's commit. Disk-full errors are
// recoverable; others poison the Store (see the package doc).
func (s *Store) commitError(err error) error {
	switch {
	case err == nil:
		s.noteDiskFull(nil)
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("update %s: %w", s.path, ErrClosed)
	case fileutil.IsDiskFull(err):
		full := fmt.Errorf("update %s: %w: %v", s.path, ErrDiskFull, err)
		s.noteDiskFull(full)
		return full
	}
	failed := fmt.Errorf("update %s: %w: commit failed: %v", s.path, ErrFailed, err)
	s.mu.Lock()
	if s.failed == nil {
		s.failed = failed
	}
	s.mu.Unlock()
	return failed
}
