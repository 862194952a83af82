package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

// TestUpstreamMessagesAreBounded: a broken tax service's message (or
// status) of 500 KB does not come back whole in an error or a receipt:
// receiptd keeps these on disk in each attempt's history and outcome, and
// a 5xx is retried forever, so one receipt would grow by the answer's
// size at every attempt.
func TestUpstreamMessagesAreBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("é", 250_000) // 500 KB, two bytes a rune
	for _, tc := range []struct {
		name string
		code int
		body string
	}{
		{"5xx message", http.StatusServiceUnavailable, `{"status":"ERROR","message":"` + huge + `"}`},
		{"4xx message", http.StatusBadRequest, `{"status":"ERROR","message":"` + huge + `"}`},
		{"2xx ERROR message", http.StatusOK, `{"status":"ERROR","message":"` + huge + `"}`},
		{"2xx unknown status", http.StatusOK, `{"status":"` + huge + `"}`},
		{"lookup msg", http.StatusInternalServerError, `{"msg":"` + huge + `","status":500}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.code)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(client.Config{BaseURL: srv.URL, LookupBaseURL: srv.URL})
			require.NoError(t, err)
			if strings.HasPrefix(tc.name, "lookup") {
				_, err = c.Get(context.Background(), client.OpBranchInfo, nil)
			} else {
				var rec *client.Receipt
				rec, err = c.CreateReceipt(context.Background(), []byte(validReceipt))
				require.NotNil(t, rec)
				require.LessOrEqual(t, len(rec.Message), client.MaxMessage+len("…"))
			}
			var ce *client.Error
			require.True(t, errors.As(err, &ce), "%v", err)
			require.LessOrEqual(t, len(ce.Message), client.MaxMessage+len("…"))
			require.Less(t, len(err.Error()), 2*client.MaxMessage, "%.200s", err.Error())
			require.True(t, strings.HasPrefix(huge, strings.TrimSuffix(ce.Message, "…")), "cut at a rune: %q", fmt.Sprintf("%.20s", ce.Message))
		})
	}
}
