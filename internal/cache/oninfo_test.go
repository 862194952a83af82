package cache

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnInfoSeesEveryInfoAnswer: each /rest/info answer fetched for a POS
// is handed to Config.OnInfo; a cached answer served while PosAPI is
// away is not (it is old news), nor are other kinds.
func TestOnInfoSeesEveryInfoAnswer(t *testing.T) {
	up := newPosAPI(t)
	var mu sync.Mutex
	var seen []string
	e := newEnv(t, openStore(t), newClient(t, up.srv.URL), Config{OnInfo: func(body []byte) {
		mu.Lock()
		seen = append(seen, string(body))
		mu.Unlock()
	}})
	a := e.get(t, "/rest/info")
	require.Equal(t, http.StatusOK, a.status)
	b := e.get(t, "/rest/bankAccounts?tin=5317878")
	require.Equal(t, http.StatusOK, b.status)
	up.srv.Close()
	require.Equal(t, Stale, e.get(t, "/rest/info").cache())

	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{a.body}, seen)
}
