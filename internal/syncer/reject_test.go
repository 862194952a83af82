package syncer_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// A rejection keeps status ERROR, a message and the HTTP status whatever
// shape the 4xx body has: PosAPI's, another JSON error, a proxy's page.
func TestRejectedOutcomeWhateverTheBody(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		code    int
		ctype   string
		body    string
		message string
	}{
		{"PosAPI", 400, "application/json", `{"status":"ERROR","message":"billIdSuffix: used today"}`, "billIdSuffix: used today"},
		{"Spring-style", 400, "application/json", `{"timestamp":"2026-11-22T10:00:00","status":400,"message":"merchant blocked"}`, "merchant blocked"},
		{"proxy page", 403, "text/html", "<html><head><title>403 Forbidden</title></head><body><h1>Access denied</h1></body></html>",
			"HTTP 403 Forbidden: 403 Forbidden Access denied"},
		{"no body", 404, "", "", "HTTP 404 Not Found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &scripted{answer: func(_ int, w http.ResponseWriter) {
				if tc.ctype != "" {
					w.Header().Set("Content-Type", tc.ctype)
				}
				w.WriteHeader(tc.code)
				_, _ = io.WriteString(w, tc.body)
			}}
			cfg := fastConfig()
			r := newRig(t, cfg, sim.Options{})
			r.useScripted(t, cfg, up)
			e := r.enqueue(testkit.Receipt("rej"))
			d, _, err := r.q.RequestDelete(context.Background(), "999999999999999999999999999999999", "2026-11-22 10:00:00", time.Now())
			require.NoError(t, err)
			r.start()
			r.waitSettled(10 * time.Second)

			for id, state := range map[string]queue.State{e.QueueID: queue.StateRejected, d.QueueID: queue.StateDeleteRejected} {
				got := r.get(id)
				require.Equal(t, state, got.State)
				require.NotNil(t, got.Outcome)
				require.Equal(t, "ERROR", got.Outcome.Status)
				require.Equal(t, tc.message, got.Outcome.Message)
				require.Equal(t, tc.code, got.Outcome.HTTPStatus)
			}
		})
	}
}

// A delete whose answer was lost did its work upstream; its retry hears
// "not found". That is the delete done, not a rejection.
func TestDeleteRetriedAfterALostAnswerEndsDeleted(t *testing.T) {
	t.Parallel()
	r := newRig(t, fastConfig(), sim.Options{Seed: 21})
	e := r.enqueue(testkit.Receipt("lostdel"))
	r.start()
	r.waitSettled(5 * time.Second)
	r.stop()
	id := r.get(e.QueueID).Outcome.ID
	require.NotEmpty(t, id)

	// The simulator deletes, then drops the connection: ambiguous.
	require.NoError(t, r.sim.SetFaults(sim.Faults{DropRate: 1}))
	d, action, err := r.q.RequestDelete(context.Background(), e.QueueID, "", time.Now())
	require.NoError(t, err)
	require.Equal(t, queue.DeleteQueued, action)
	r.start()
	r.waitSettled(10 * time.Second)

	got := r.get(d.QueueID)
	require.Equal(t, queue.StateDeleted, got.State)
	require.Positive(t, got.Ambiguous)
	require.Equal(t, queue.ResultRejected, got.Attempts[len(got.Attempts)-1].Result, "the history keeps what the retry heard")
	require.Contains(t, got.Outcome.Message, "no longer knows")
	require.Equal(t, id, got.Outcome.ID)
	require.Equal(t, []string{id}, r.sim.Deleted(), "deleted once, by the attempt whose answer was lost")
}
