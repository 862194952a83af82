package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
)

func TestDeleteReceiptReturnsTheUpstreamAnswer(t *testing.T) {
	t.Parallel()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, http.MethodDelete, r.Method)
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"SUCCESS","message":"deleted"}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Config{BaseURL: srv.URL, LookupBaseURL: srv.URL})
	require.NoError(t, err)

	raw, err := c.DeleteReceipt(context.Background(), "123", "2026-11-22 10:00:00")
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"123","date":"2026-11-22 10:00:00"}`, string(got))
	require.Equal(t, http.StatusOK, raw.StatusCode)
	require.Equal(t, `{"status":"SUCCESS","message":"deleted"}`, string(raw.Body))
}
