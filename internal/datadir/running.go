package datadir

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/store"
)

// refuseIfRunning refuses op (restore, salvage) while a receiptd uses the
// data directory (it holds the database's lock) or answers on the
// configured address (it may run on a database that is no longer in
// place).
func refuseIfRunning(ctx context.Context, op string, cfg config.Config, db string) error {
	if err := store.ProbeLock(db); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if addr, ok := answersHealthz(ctx, cfg); ok {
		return fmt.Errorf("%s: a receiptd answers at %s: stop it first (receiptd stop)", op, addr)
	}
	return nil
}

// answersHealthz reports whether a receiptd answers /healthz at the
// configured listen address or Unix socket.
func answersHealthz(ctx context.Context, cfg config.Config) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	tr := &http.Transport{Proxy: nil}
	addr, url := "", ""
	switch {
	case cfg.Listen != "":
		addr = config.Dialable(cfg.Listen)
		url = "http://" + addr + "/healthz"
	case cfg.ListenUnix != "":
		addr, url = cfg.ListenUnix, "http://localhost/healthz"
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", cfg.ListenUnix)
		}
	default:
		return "", false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", false
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", false
	}
	_ = resp.Body.Close()
	return addr, resp.StatusCode == http.StatusOK
}
