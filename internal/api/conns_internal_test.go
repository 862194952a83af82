package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestConnClosedAtTheCapStoresNothing: a connection chosen to be closed
// for a new one, whose request body then arrives whole before it is
// closed, must not have that request carried out (its answer could never
// be written): the body reads as failed, and a request without a body is
// not served.
func TestConnClosedAtTheCapStoresNothing(t *testing.T) {
	t.Parallel()
	l := newConnLimit(nil, 1, zap.NewNop(), func(bool) {})
	first := &limitedConn{l: l, since: time.Now()}
	_, ok := l.admit(first)
	require.True(t, ok)
	victim, ok := l.admit(&limitedConn{l: l, since: time.Now()})
	require.True(t, ok)
	require.Same(t, first, victim)

	body := &busyAtEOF{ReadCloser: io.NopCloser(strings.NewReader(`{"id":"x"}`)), c: first}
	_, err := io.ReadAll(body)
	require.ErrorIs(t, err, errClosedAtCap)

	served := false
	h := markBusy(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served = true }))
	r := httptest.NewRequest(http.MethodGet, "/receiptd/status", nil)
	h.ServeHTTP(httptest.NewRecorder(), r.WithContext(contextWithConn(r, first)))
	require.False(t, served, "a request on a connection being closed is not served")
}

func contextWithConn(r *http.Request, c *limitedConn) context.Context {
	return context.WithValue(r.Context(), connKey{}, c)
}
