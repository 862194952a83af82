package api

import (
	"context"
	"fmt"
	"time"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/statuspage"
)

// failureStates are the states whose entries the status page lists as
// failures: each needs a person's attention.
var failureStates = []queue.State{queue.StateRejected, queue.StateHeld, queue.StatePayment, queue.StateDeleteRejected}

// pageData gathers what the status page at GET / shows: the cards'
// data (pageOf) and the tables below them (addTables).
func (s *Server) pageData(ctx context.Context) (statuspage.Data, error) {
	st, err := s.statusBase(ctx)
	if err != nil {
		return statuspage.Data{}, err
	}
	d := s.pageOf(st)
	if err := s.addTables(&d); err != nil {
		return statuspage.Data{}, err
	}
	return d, nil
}

// pageOf is the page's data for st (whose Alert is the unsent age's
// level) without its tables: all that "Needs attention", the alert level
// and the first line are made of.
func (s *Server) pageOf(st Status) statuspage.Data {
	d := statuspage.Data{
		Version: st.Version, Now: s.o.Now(),
		UpstreamUp: st.Upstream.State == "up", UpstreamSince: st.Upstream.Since, LastError: st.Upstream.LastError,
		Counts:          make(map[string]int, len(st.Counts)),
		OldestUnsentAge: time.Duration(st.OldestUnsentAge) * time.Second, Alert: st.Alert,
		UnsentWarn: s.o.UnsentWarn, UnsentCritical: s.o.UnsentCritical, OutageCritical: s.o.OutageCritical,
		PosAPI:  s.posapiPage(st.PosAPI),
		Fleet:   pageFleet(st.Fleet),
		LogFile: s.o.LogFile, LogTerminal: s.o.LogTerminal,
	}
	d.Control = pageControl(st.Control)
	d.Update = pageUpdate(st.Update, st.Version)
	if st.LastSuccess != nil {
		d.LastSuccess = *st.LastSuccess
	}
	if st.Upstream.LastErrorAt != nil {
		d.LastErrorAt = *st.Upstream.LastErrorAt
	}
	if s.d.Store != nil {
		h := s.d.Store.Health()
		d.DiskFull, d.DiskFullSince, d.DatabaseFailed, d.DatabasePath = h.DiskFull, h.DiskFullSince, h.Failed, h.Path
	}
	if since, full := s.d.Queue.LogFull(); full != nil && d.DiskFull == "" {
		d.DiskFull, d.DiskFullSince = full.Error(), since
	}
	for state, n := range st.Counts {
		d.Counts[string(state)] = n
	}
	d.Backup = backupOf(st.Backup)
	return d
}

// addTables adds what only the page's tables show: the failed entries
// (read from the queue), the lookup cache's freshness and whether the
// warm set is cached (read from the store). /receiptd/status's alert and
// the head office's health line, asked every few seconds, need none of it.
func (s *Server) addTables(d *statuspage.Data) error {
	failures, err := s.failures()
	if err != nil {
		return err
	}
	d.Failures = failures
	if s.d.Freshness != nil {
		for _, k := range s.d.Freshness() {
			d.Cache = append(d.Cache, statuspage.CacheKind{
				Kind: string(k.Kind), Entries: k.Entries, OldestAge: k.OldestAge,
				LastRefresh: k.LastRefresh, LastError: k.LastError,
			})
		}
	}
	if s.d.Warmth != nil {
		w := s.d.Warmth()
		d.Offline = &statuspage.Offline{Wanted: w.Wanted, Missing: w.Missing, LastRun: w.LastRun, Kinds: w.Kinds}
	}
	return nil
}

// failures are the newest entries of each failure state, then the newest
// queued, sending and sent entries with a failed attempt: what an outage
// did, while it lasts (queued, or sending while the worker probes with
// it) and after (sent once it answered again).
func (s *Server) failures() ([]statuspage.Failure, error) {
	var out []statuspage.Failure
	for _, state := range failureStates {
		entries, err := s.d.Queue.Latest(state, statuspage.MaxFailures)
		if err != nil {
			return nil, fmt.Errorf("status page: %w", err)
		}
		for _, e := range entries {
			out = append(out, failureOf(e))
		}
	}
	for _, state := range []queue.State{queue.StateQueued, queue.StateSending, queue.StateSent} {
		entries, err := s.d.Queue.Latest(state, statuspage.MaxFailures)
		if err != nil {
			return nil, fmt.Errorf("status page: %w", err)
		}
		for _, e := range entries {
			if f, ok := attemptFailureOf(e); ok {
				out = append(out, f)
			}
		}
	}
	return out, nil
}

// attemptFailureOf is an entry whose last failed attempt is worth listing,
// with that attempt's error and time; ok is false when no attempt failed.
func attemptFailureOf(e queue.Entry) (statuspage.Failure, bool) {
	for i := len(e.Attempts) - 1; i >= 0; i-- {
		if a := e.Attempts[i]; a.Error != "" {
			return statuspage.Failure{QueueID: e.QueueID, Kind: string(e.Kind), State: string(e.State), At: a.At,
				Message: a.Error, Attempts: len(e.Attempts) + e.AttemptsDropped}, true
		}
	}
	return statuspage.Failure{}, false
}

// failureOf is how one entry appears among the failures.
func failureOf(e queue.Entry) statuspage.Failure {
	f := statuspage.Failure{QueueID: e.QueueID, Kind: string(e.Kind), State: string(e.State), At: e.UpdatedAt, Attempts: len(e.Attempts) + e.AttemptsDropped}
	if e.Outcome != nil && e.Outcome.Message != "" {
		f.Message = e.Outcome.Message
	} else if n := len(e.Attempts); n > 0 {
		f.Message = e.Attempts[n-1].Error
	}
	return f
}

// backupOf is the snapshot loop's state for the status page; nil when
// snapshots are off.
func backupOf(b backup.Status) *statuspage.Backup {
	if b.Dir == "" {
		return nil
	}
	out := &statuspage.Backup{Dir: b.Dir, LastFile: b.LastFile, LastError: b.LastError}
	if b.LastSuccess != nil {
		out.LastSuccess = *b.LastSuccess
	}
	if b.LastErrorAt != nil {
		out.LastErrorAt = *b.LastErrorAt
	}
	if b.Next != nil {
		out.Next = *b.Next
	}
	return out
}
