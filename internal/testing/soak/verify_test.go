package soak_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// entry is the part of GET /receiptd/entries the soak checks.
type entry struct {
	QueueID      string `json:"queueId"`
	Kind         string `json:"kind"`
	State        string `json:"state"`
	BillIDSuffix string `json:"billIdSuffix"`
	Attempts     []struct {
		Result string `json:"result"`
	} `json:"attempts"`
	Ambiguous int    `json:"ambiguousAttempts"`
	DeleteID  string `json:"deleteId"`
	Outcome   *struct {
		ID string `json:"id"`
	} `json:"outcome"`
}

// ambiguous reports whether an attempt of e may have reached the upstream
// without receiptd learning the answer.
func (e entry) ambiguous() bool {
	if e.Ambiguous > 0 {
		return true
	}
	for _, a := range e.Attempts {
		if a.Result == "ambiguous" || a.Result == "interrupted" {
			return true
		}
	}
	return false
}

var terminal = map[string]map[string]bool{
	"receipt": {"sent": true, "payment": true, "rejected": true, "cancelled": true},
	"delete":  {"deleted": true, "delete_rejected": true},
}

// listEntries reads every entry, page by page, by queueId.
func listEntries(ctx context.Context, t *testing.T, c *http.Client, base string) map[string]entry {
	list, err := testkit.ListEntries[entry](ctx, c, base)
	require.NoError(t, err)
	all := map[string]entry{}
	for _, e := range list {
		require.NotContains(t, all, e.QueueID, "an entry listed twice")
		all[e.QueueID] = e
	}
	return all
}

// figures are the soak's results.
type figures struct {
	accepted, sent, cancelled, ambiguous, duplicates, restarts, deleted, issued, dropped int
}

// verify checks the promises of docs/contract.md against the entries and the
// simulator's record, and counts.
func verify(t *testing.T, tal *tally, entries map[string]entry, s *sim.Sim) figures {
	var f figures
	issuedByID := map[string]sim.Issued{}
	issuedBySuffix := map[string]int{}
	for _, r := range s.Receipts() {
		issuedByID[r.ID] = r
		issuedBySuffix[r.BillIDSuffix]++
		if r.Dropped {
			f.dropped++
		}
	}
	f.issued = len(issuedByID)
	for qid := range tal.receipts {
		e, ok := entries[qid]
		require.True(t, ok, "receipt %s answered 2xx has no entry", qid)
		require.Equal(t, "receipt", e.Kind, qid)
		require.True(t, terminal["receipt"][e.State], "receipt %s answered 2xx ended %s", qid, e.State)
		f.accepted++
	}
	for qid, id := range tal.deletes {
		e, ok := entries[qid]
		require.True(t, ok, "delete of %s answered 2xx (queueId %s) has no entry", id, qid)
		require.True(t, terminal[e.Kind][e.State], "delete of %s answered with %s, which ended %s", id, qid, e.State)
	}
	deleted := map[string]bool{}
	for _, id := range s.Deleted() {
		deleted[id] = true
	}
	bySuffix := map[string]string{}
	for _, e := range entries {
		if e.Kind == "delete" {
			f.countDelete(t, e, deleted)
			continue
		}
		if prev, dup := bySuffix[e.BillIDSuffix]; dup {
			require.Failf(t, "one receipt, two entries", "billIdSuffix %s in %s and %s", e.BillIDSuffix, prev, e.QueueID)
		}
		bySuffix[e.BillIDSuffix] = e.QueueID
		f.countReceipt(t, e, issuedByID, issuedBySuffix[e.BillIDSuffix])
	}
	return f
}

func (f *figures) countReceipt(t *testing.T, e entry, issued map[string]sim.Issued, times int) {
	if e.ambiguous() {
		f.ambiguous++
	}
	if times > 1 {
		f.duplicates++
		require.True(t, e.ambiguous(), "%s (%s) issued %d times without an ambiguous attempt", e.QueueID, e.BillIDSuffix, times)
	}
	switch e.State {
	case "sent":
		f.sent++
		require.NotNil(t, e.Outcome, "sent %s has no outcome", e.QueueID)
		r, ok := issued[e.Outcome.ID]
		require.True(t, ok, "sent %s: outcome id %s was never issued by the simulator", e.QueueID, e.Outcome.ID)
		require.Equal(t, e.BillIDSuffix, r.BillIDSuffix, "sent %s: outcome id belongs to another receipt", e.QueueID)
	case "cancelled":
		f.cancelled++
		require.Zero(t, times, "cancelled %s (%s) was issued by the simulator", e.QueueID, e.BillIDSuffix)
	}
}

func (f *figures) countDelete(t *testing.T, e entry, deleted map[string]bool) {
	require.True(t, terminal["delete"][e.State], "delete %s ended %s", e.QueueID, e.State)
	if e.State == "deleted" {
		f.deleted++
		require.True(t, deleted[e.DeleteID], "delete %s of %s is deleted but the simulator never deleted it", e.QueueID, e.DeleteID)
	}
}
