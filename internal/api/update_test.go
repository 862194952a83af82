package api_test

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/api"
)

// updater counts the switches asked for and answers with err.
type updater struct {
	asked atomic.Int32
	err   error
}

func (u *updater) RequestSwitch() error { u.asked.Add(1); return u.err }
func (u *updater) UpdateStatus() (any, error) {
	return map[string]string{"version": "1.0.0"}, nil
}

// TestUpdateRouteIsAnOperatorsRoute: POST /receiptd/update asks for the
// switch only with receiptd's token, from this machine's names, not
// cross-origin and with a JSON body type; a POS without the token, a web
// page or a form never reaches it.
func TestUpdateRouteIsAnOperatorsRoute(t *testing.T) {
	t.Parallel()
	const token = "an-operator-token-0123456789"
	u := &updater{}
	e := newEnv(t, envOpts{api: api.Options{Token: token}, update: u})
	bearer := "Bearer " + token
	for _, c := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no token", nil, http.StatusUnauthorized},
		{"wrong token", []string{"Authorization", "Bearer nope-nope-nope-nope"}, http.StatusUnauthorized},
		{"another host", []string{"Authorization", bearer, "Host", "till.example"}, http.StatusForbidden},
		{"cross-origin", []string{"Authorization", bearer, "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"a form", []string{"Authorization", bearer, "Content-Type", "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
	} {
		r := e.do(http.MethodPost, "/receiptd/update", "", c.hdr...)
		require.Equal(t, c.want, r.code, "%s: %s", c.name, r.body)
	}
	require.Zero(t, u.asked.Load(), "no refused request reached the switch")

	r := e.do(http.MethodPost, "/receiptd/update", "", "Authorization", bearer)
	require.Equal(t, http.StatusAccepted, r.code, "%s", r.body)
	require.EqualValues(t, 1, u.asked.Load())
	r = e.do(http.MethodGet, "/receiptd/update", "", "Authorization", bearer)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "1.0.0", r.json(t)["version"])

	u.err = fmt.Errorf("%w: no release is staged", api.ErrUpdateRefused)
	r = e.do(http.MethodPost, "/receiptd/update", "", "Authorization", bearer)
	require.Equal(t, http.StatusConflict, r.code)
	require.Contains(t, string(r.body), "no release is staged")
	u.err = errors.New("disk")
	require.Equal(t, http.StatusInternalServerError, e.do(http.MethodPost, "/receiptd/update", "", "Authorization", bearer).code)
}

// TestUpdateRouteWithoutUpdater: a server given no Updater takes no
// update.
func TestUpdateRouteWithoutUpdater(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	require.Equal(t, http.StatusServiceUnavailable, e.do(http.MethodPost, "/receiptd/update", "").code)
	require.Equal(t, http.StatusServiceUnavailable, e.do(http.MethodGet, "/receiptd/update", "").code)
}
