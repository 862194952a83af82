package client_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// silentTCP accepts connections and never says anything: a TLS handshake
// against it hangs until the deadline.
func silentTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

func handlerServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func answer(code int, header map[string]string, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// classCase is one row of the classification table.
type classCase struct {
	name       string
	base       func(t *testing.T) string
	class      client.Class
	status     int
	message    string
	retryAfter time.Duration // lower bound
	receipt    bool          // a *Receipt comes back with the error
	// hangs: the case ends by the client's timeout, kept short; every
	// other case has a long one, so that a loaded machine moving 2 MiB
	// does not make it a timeout instead.
	hangs bool
}

// classCases are the servers (or absences of one) and what each must
// yield for a create.
func classCases(t *testing.T) []classCase {
	dropSim := sim.New(sim.Options{})
	require.NoError(t, dropSim.SetFaults(sim.Faults{DropRate: 1}))
	tlsSrv := httptest.NewUnstartedServer(answer(200, nil, `{"status":"SUCCESS"}`))
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	httpDate := time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)

	return []classCase{
		{name: "closed port", base: func(t *testing.T) string { return "http://" + testkit.ClosedAddr(t) }, class: client.NotSent},
		{name: "TLS handshake fails (unknown CA)", base: func(*testing.T) string { return tlsSrv.URL }, class: client.NotSent},
		{name: "timeout during TLS handshake", base: func(t *testing.T) string { return "https://" + silentTCP(t) }, class: client.NotSent, hangs: true},
		{name: "hangs after reading the body", base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			})
		}, class: client.Ambiguous, hangs: true},
		{name: "processed then dropped", base: func(t *testing.T) string {
			return handlerServer(t, dropSim.Handler().ServeHTTP)
		}, class: client.Ambiguous},
		{name: "200 unreadable", base: func(t *testing.T) string { return handlerServer(t, answer(200, nil, `<html>`)) },
			class: client.Ambiguous, status: 200, receipt: true},
		{name: "200 unknown status", base: func(t *testing.T) string { return handlerServer(t, answer(200, nil, `{"status":"OK"}`)) },
			class: client.Ambiguous, status: 200, receipt: true},
		{name: "200 SUCCESS without id", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, nil, `{"status":"SUCCESS","lottery":"SN 1"}`))
		}, class: client.Ambiguous, status: 200, receipt: true},
		{name: "200 PAYMENT with a blank id", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, nil, `{"status":"PAYMENT","id":" "}`))
		}, class: client.Ambiguous, status: 200, receipt: true},
		{name: "200 SUCCESS with a 40,000-byte id", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, nil, `{"status":"SUCCESS","id":"`+strings.Repeat("1", 40000)+`"}`))
		}, class: client.Ambiguous, status: 200, receipt: true},
		{name: "200 larger than MaxAnswer", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, nil, `{"status":"SUCCESS","id":"1","pad":"`+strings.Repeat("x", 2<<20)+`"}`))
		}, class: client.Ambiguous, status: 200},
		{name: "400 larger than MaxAnswer", base: func(t *testing.T) string {
			return handlerServer(t, answer(400, nil, `{"status":"ERROR","message":"`+strings.Repeat("x", 2<<20)+`"}`))
		}, class: client.Ambiguous, status: 400},
		{name: "503 Retry-After seconds", base: func(t *testing.T) string {
			return handlerServer(t, answer(503, map[string]string{"Retry-After": "7"}, `busy`))
		}, class: client.Transient, status: 503, retryAfter: 7 * time.Second, receipt: true},
		{name: "503 Retry-After date", base: func(t *testing.T) string {
			return handlerServer(t, answer(503, map[string]string{"Retry-After": httpDate}, ``))
		}, class: client.Transient, status: 503, retryAfter: 80 * time.Second, receipt: true},
		{name: "429", base: func(t *testing.T) string { return handlerServer(t, answer(429, nil, ``)) },
			class: client.Transient, status: 429, receipt: true},
		{name: "408", base: func(t *testing.T) string { return handlerServer(t, answer(408, nil, ``)) },
			class: client.Transient, status: 408, receipt: true},
		{name: "400 ERROR body", base: func(t *testing.T) string {
			return handlerServer(t, answer(400, nil, `{"status":"ERROR","message":"merchantTin: unknown"}`))
		}, class: client.Rejected, status: 400, message: "merchantTin: unknown", receipt: true},
		{name: "404", base: func(t *testing.T) string { return handlerServer(t, answer(404, nil, `nope`)) },
			class: client.Rejected, status: 404, message: "Not Found", receipt: true},
		{name: "200 status ERROR", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, nil, `{"status":"ERROR","message":"bad district"}`))
		}, class: client.Rejected, status: 200, message: "bad district", receipt: true},
		{name: "302 not followed", base: func(t *testing.T) string {
			return handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/elsewhere" {
					answer(200, nil, `{"status":"SUCCESS","id":"1"}`)(w, r)
					return
				}
				answer(302, map[string]string{"Location": "/elsewhere"}, ``)(w, r)
			})
		}, class: client.Transient, status: 302, receipt: true},
		{name: "200 with a head larger than 1 MiB", base: func(t *testing.T) string {
			return handlerServer(t, answer(200, map[string]string{"X-Big": strings.Repeat("a", 2<<20)}, `{"status":"SUCCESS","id":"1"}`))
		}, class: client.Ambiguous},
	}
}

// TestErrorClassification: every way a create can fail is classified the
// same whether the send transport carries it or it goes on a predialed
// connection (written and read on the caller's goroutine: direct.go).
func TestErrorClassification(t *testing.T) {
	cases := classCases(t)
	for _, way := range []string{"transport", "predialed"} {
		for _, tc := range cases {
			t.Run(way+"/"+tc.name, func(t *testing.T) { classifyCase(t, tc, way == "predialed") })
		}
	}
}

func classifyCase(t *testing.T, tc classCase, predial bool) {
	cfg := client.Config{BaseURL: tc.base(t), Timeout: 30 * time.Second}
	if tc.hangs {
		cfg.Timeout = 300 * time.Millisecond
	}
	c, err := client.New(cfg)
	require.NoError(t, err)
	ctx := context.Background()
	if predial {
		p := c.Predial()
		defer p.Close()
		ctx = client.WithPredial(ctx, p)
	}
	rec, err := c.CreateReceipt(ctx, []byte(validReceipt))
	require.Error(t, err)
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, tc.class, e.Class, "%v", err)
	cl, ok := client.ClassOf(err)
	require.True(t, ok)
	require.Equal(t, tc.class, cl)
	require.Equal(t, tc.status, e.StatusCode)
	require.Equal(t, client.OpCreateReceipt, e.Op)
	if tc.message != "" {
		require.Equal(t, tc.message, e.Message)
	}
	require.GreaterOrEqual(t, e.RetryAfter, tc.retryAfter)
	if tc.receipt {
		require.NotNil(t, rec)
		require.Equal(t, tc.status, rec.HTTPStatus)
	} else {
		require.Nil(t, rec)
	}
}

func TestTimeoutAfterSendIsAmbiguousButBeforeIsNot(t *testing.T) {
	// The same 100ms deadline: spent in the TLS handshake it is NotSent,
	// spent waiting for the answer it is Ambiguous.
	hang := handlerServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	for _, tc := range []struct {
		base  string
		class client.Class
	}{{"https://" + silentTCP(t), client.NotSent}, {hang, client.Ambiguous}} {
		c, err := client.New(client.Config{BaseURL: tc.base, LookupBaseURL: tc.base, Timeout: 100 * time.Millisecond})
		require.NoError(t, err)
		_, err = c.Get(context.Background(), client.OpInfo, nil)
		cl, ok := client.ClassOf(err)
		require.True(t, ok)
		require.Equal(t, tc.class, cl, "%v", err)
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
}

func TestCustomCAFile(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(answer(200, nil, `{"status":"SUCCESS","id":"1"}`))
	t.Cleanup(srv.Close)
	ca := writeCert(t, srv.TLS)
	c, err := client.New(client.Config{BaseURL: srv.URL, CAFile: ca})
	require.NoError(t, err)
	rec, err := c.CreateReceipt(context.Background(), []byte(`{}`))
	require.NoError(t, err)
	require.Equal(t, "1", rec.ID)

	_, err = client.New(client.Config{BaseURL: srv.URL, CAFile: writeFile(t, "not a cert")})
	require.ErrorIs(t, err, client.ErrConfig)
}

func writeCert(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	require.NotEmpty(t, cfg.Certificates)
	return writeFile(t, string(pemCert(cfg.Certificates[0].Certificate[0])))
}

// Queries (lookups, info, bank accounts) give up after QueryTimeout even
// when Timeout is long, because a POS waits on them; sendData, creates and
// deletes get the whole Timeout. The parent context has no deadline of its
// own that could fire first.
func TestQueriesAreCappedAtQueryTimeout(t *testing.T) {
	t.Parallel()
	hang := handlerServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // else the server never notices the client leave
		<-r.Context().Done()
	})
	c, err := client.New(client.Config{BaseURL: hang, LookupBaseURL: hang, Timeout: time.Hour, QueryTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	for _, op := range []client.Op{client.OpInfo, client.OpBankAccounts, client.OpBranchInfo, client.OpClassification} {
		_, err = c.Get(context.Background(), op, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded, "%s", op)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.CreateReceipt(ctx, []byte(`{}`))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Error(t, ctx.Err(), "the create waited past the query cap, until its caller's deadline")
	require.False(t, client.OpSendData.Query())
	require.False(t, client.OpCreateReceipt.Query())
}
