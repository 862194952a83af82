package datadir

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/store"
)

// TestRefusesWhileReceiptdRuns: restore and salvage change nothing while
// a receiptd holds the database (its lock), or answers /healthz on the
// configured address (it may run on a database no longer in place).
func TestRefusesWhileReceiptdRuns(t *testing.T) {
	ops := map[string]func(cfg config.Config) error{
		"restore": func(cfg config.Config) error {
			_, err := Restore(context.Background(), cfg, backupOf(t, 1))
			return err
		},
		"salvage": func(cfg config.Config) error {
			_, err := Salvage(context.Background(), cfg)
			return err
		},
	}
	for op, run := range ops {
		t.Run(op+", the database held", func(t *testing.T) {
			dir := dataDirWith(t, 2)
			before := snapshot(t, dir)
			st, err := store.OpenDir(dir, store.Options{})
			require.NoError(t, err)
			defer st.Close()
			err = run(configFor(t, dir))
			require.ErrorIs(t, err, store.ErrLocked)
			require.ErrorContains(t, err, op+": ")
			require.ErrorContains(t, err, "stop it first")
			require.NoError(t, st.Close())
			require.Equal(t, before, snapshot(t, dir), "nothing changed")
		})
		t.Run(op+", a receiptd answers", func(t *testing.T) {
			dir := dataDirWith(t, 2)
			before := snapshot(t, dir)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/healthz" {
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			cfg := configFor(t, dir)
			cfg.Listen = srv.Listener.Addr().String()
			err := run(cfg)
			require.ErrorContains(t, err, op+": a receiptd answers at "+cfg.Listen+": stop it first")
			require.Equal(t, before, snapshot(t, dir), "nothing changed")
		})
	}
}

// TestAnswersHealthzOnlyWhenHealthy: an address where something else
// answers (a 404 for /healthz) is not a running receiptd.
func TestAnswersHealthzOnlyWhenHealthy(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := config.Default()
	cfg.Listen = srv.Listener.Addr().String()
	_, ok := answersHealthz(context.Background(), cfg)
	require.False(t, ok)
}
