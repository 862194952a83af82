package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/backup"
	"github.com/receiptd/receiptd/internal/posapi"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/statuspage"
	"github.com/receiptd/receiptd/internal/syncer"
)

// maxListLimit is the largest page GET /receiptd/entries serves.
const maxListLimit = 1000

// entryView is an entry as GET /receiptd/entries shows it: outcome is
// always present (null until there is one), as docs/contract.md lists it
// ("Shapes other programs rely on").
type entryView struct {
	queue.Entry
	Outcome *queue.Outcome `json:"outcome"`
	// Note says what a person must do about the entry (held ones).
	Note string `json:"note,omitempty"`
}

func viewOf(e queue.Entry) entryView {
	v := entryView{Entry: e, Outcome: e.Outcome}
	if e.State == queue.StateHeld {
		v.Note = heldNote(e.QueueID)
	}
	return v
}

// heldNote is what a POS and an operator are told about a held entry.
func heldNote(id string) string {
	return "held: the tax service's answer was lost (or the receipt was restored from a backup), so it may already " +
		"have been issued; receiptd does not send it again by itself. An operator must check with the tax service " +
		"whether it was issued, and only if it was not, retry it: receiptd retry -force " + id +
		" (POST /receiptd/entries/" + id + "/retry?confirm=checked)"
}

// entryPage is one page of GET /receiptd/entries; next is the cursor for
// the following page ("after"), empty on the last one.
type entryPage struct {
	Entries []entryView `json:"entries"`
	Next    string      `json:"next"`
}

func (s *Server) getEntry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("queueId")
	e, err := s.d.Queue.Get(id)
	if err != nil {
		s.fail(w, "get entry", err)
		return
	}
	writeJSON(w, http.StatusOK, viewOf(e))
}

func (s *Server) listEntries(w http.ResponseWriter, r *http.Request) {
	opts, msg := listOptions(r)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	entries, next, err := s.d.Queue.List(opts)
	if err != nil {
		s.fail(w, "list entries", err)
		return
	}
	page := entryPage{Entries: make([]entryView, 0, len(entries)), Next: next}
	for _, e := range entries {
		page.Entries = append(page.Entries, viewOf(e))
	}
	writeJSON(w, http.StatusOK, page)
}

// listOptions reads state, limit and after; a bad value is answered with
// the message returned.
func listOptions(r *http.Request) (queue.ListOptions, string) {
	q := r.URL.Query()
	var o queue.ListOptions
	if st := q.Get("state"); st != "" {
		if !slices.Contains(queue.AllStates, queue.State(st)) {
			return o, fmt.Sprintf("state: must be one of %v", queue.AllStates)
		}
		o.State = queue.State(st)
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxListLimit {
			return o, fmt.Sprintf("limit: must be a whole number from 1 to %d", maxListLimit)
		}
		o.Limit = n
	}
	if a := q.Get("after"); a != "" {
		if _, ok := queue.ParseID(a); !ok {
			return o, "after: must be a queueId such as Q000000000042"
		}
		o.After = a
	}
	return o, ""
}

func (s *Server) retryEntry(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("queueId")
	checked := r.URL.Query().Get("confirm") == "checked"
	var mark uint64
	if s.d.Answers != nil {
		mark = s.d.Answers.Mark()
	}
	e, err := s.d.Queue.Retry(r.Context(), id, checked)
	if errors.Is(err, queue.ErrUnchecked) {
		writeError(w, http.StatusConflict, uncheckedMessage(id))
		return
	}
	if err != nil {
		s.fail(w, "retry entry", err)
		return
	}
	if s.d.Answers != nil {
		s.d.Answers.Forget(id, mark) // the answer before the retry is stale
	}
	s.log.Info("entry put back in the queue by an operator", zap.String("queueId", id), zap.Bool("checked", checked))
	writeJSON(w, http.StatusOK, viewOf(e))
}

// uncheckedMessage refuses the retry of a held entry without ?confirm=checked
// and says what to check first.
func uncheckedMessage(id string) string {
	return id + " is held: its answer from the tax service was lost, or it was restored from a backup, so it may " +
		"already have been issued. Before a retry, check with the tax service whether a receipt for this sale " +
		"(its merchantTin, posNo, billIdSuffix and date: GET /receiptd/entries/" + id + ") was issued. If it was, do not " +
		"retry: the sale is reported. If it was not, retry with ?confirm=checked (receiptd retry -force " + id + ")"
}

// Status is what GET /receiptd/status answers (docs/contract.md, "Shapes
// other programs rely on").
type Status struct {
	// Counts has every state, zero included.
	Counts map[queue.State]int `json:"counts"`
	// OldestUnsentAge is the age in whole seconds of the oldest entry not yet
	// accepted upstream; 0 when there is none.
	OldestUnsentAge int64          `json:"oldestUnsentAge"`
	Alert           string         `json:"alert"` // none, warn or critical
	Upstream        UpstreamStatus `json:"upstream"`
	// LastSuccess is when the upstream last accepted a request since start;
	// null when it has not.
	LastSuccess *time.Time `json:"lastSuccess"`
	Version     string     `json:"version"`
	// PosAPI is PosAPI's own limits: its lottery reserve, its last send
	// and the clock skew (figures null while unknown).
	PosAPI posapi.Status `json:"posapi"`
	// Backup is the [backup] snapshot loop's state; its dir is empty when
	// snapshots are off.
	Backup backup.Status `json:"backup"`
	Fleet  FleetStatus   `json:"fleet"`
	// Control is the OpAMP channel to the head office.
	Control ControlStatus `json:"control"`
	// Update is the update's state (update.json); Version above is the
	// version answering.
	Update UpdateStatus `json:"update"`
}

// UpstreamStatus is the tax service's reachability as the sync worker sees it.
type UpstreamStatus struct {
	State     string    `json:"state"` // up or down
	Since     time.Time `json:"since"`
	LastError string    `json:"lastError,omitempty"`
	// LastErrorAt is when LastError happened; absent with it.
	LastErrorAt *time.Time `json:"lastErrorAt,omitempty"`
}

// StatusJSON gathers what /receiptd/status answers. Its Alert is the
// status page's: the highest level among the problems "Needs attention"
// shows (statuspage.Alert), the unsent age's level among them, so a
// program reading the JSON and a person reading the page see one state.
func (s *Server) StatusJSON(ctx context.Context) (Status, error) {
	st, err := s.statusBase(ctx)
	if err != nil {
		return Status{}, err
	}
	st.Alert = statuspage.Alert(s.pageOf(st))
	return st, nil
}

// statusBase is StatusJSON with Alert the unsent age's level alone. ctx is
// accepted for the future: the reads are in-memory counters and one index
// row each.
func (s *Server) statusBase(_ context.Context) (Status, error) {
	counts, err := s.d.Queue.Counts()
	if err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	st := Status{Counts: map[queue.State]int{}, Version: s.o.Version, Upstream: UpstreamStatus{State: "up"},
		PosAPI: s.d.PosAPI.Status(), Fleet: s.fleetStatus(), Control: s.controlStatus(), Update: s.updateOf()}
	for _, state := range queue.AllStates {
		st.Counts[state] = counts[state]
	}
	oldest, ok, err := s.d.Queue.OldestUnsent()
	if err != nil {
		return Status{}, fmt.Errorf("status: %w", err)
	}
	var age time.Duration
	switch {
	case ok && s.d.Worker != nil:
		age = s.d.Worker.UnsentAge(oldest) // steady across clock changes
	case ok:
		age = max(s.o.Now().Sub(oldest), 0)
	}
	st.OldestUnsentAge = int64(age / time.Second)
	// With nothing unsent the age is 0, below both (positive) thresholds.
	st.Alert = syncer.AlertLevel(age, s.o.UnsentWarn, s.o.UnsentCritical)
	if s.d.Worker == nil {
		st.Upstream = UpstreamStatus{State: "down", LastError: "no sync worker: nothing is sent"}
	} else {
		ws := s.d.Worker.Status()
		if !ws.Up {
			st.Upstream.State = "down"
		}
		st.Upstream.Since, st.Upstream.LastError = ws.Since.UTC(), ws.LastError
		if !ws.LastErrorAt.IsZero() {
			at := ws.LastErrorAt.UTC()
			st.Upstream.LastErrorAt = &at
		}
		if !ws.LastSuccess.IsZero() {
			ls := ws.LastSuccess.UTC()
			st.LastSuccess = &ls
		}
	}
	if s.d.Backup != nil {
		st.Backup = s.d.Backup()
	}
	return st, nil
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st, err := s.StatusJSON(r.Context())
	if err != nil {
		s.fail(w, "status", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// backupWriteTime bounds the streaming of one backup; it replaces the
// server's WriteTimeout, which is sized for receipts.
const backupWriteTime = 30 * time.Minute

func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	name := "receiptd-" + s.o.Now().UTC().Format("20060102T150405Z") + ".db"
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(backupWriteTime))
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	w.Header().Set("Cache-Control", "no-store")
	if err := s.d.Queue.ApplyAll(r.Context()); err != nil {
		// The copy is still worth having (a rescue from a moved file);
		// what the log holds stays in the data directory's log.
		s.log.Warn("backup: receipts accepted moments ago are not yet in the database, so not in this copy",
			zap.Error(err))
	}
	n, err := s.d.Store.Backup(w)
	if err != nil {
		s.log.Error("backup failed; the copy sent is incomplete", zap.Int64("bytesSent", n), zap.Error(err))
		if n == 0 {
			w.Header().Del("Content-Disposition")
			writeError(w, http.StatusInternalServerError, "backup failed: see the receiptd log")
			return
		}
		// Break the connection so the client cannot take a truncated copy for
		// a complete one.
		panic(http.ErrAbortHandler)
	}
	s.log.Info("backup streamed", zap.Int64("bytes", n))
}
