package daemon_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// The published Go client github.com/techpartners-asia/ebarimt-pos3-go at
// commit 11b0479df465a0e50af3c6153f46f42c1163f516, as a POS runs it:
// pos3/pos.go ReceiptSend posts the receipt through pos3/apis.go
// httpPosRequest, which reads the body and ignores the HTTP status (its
// status check is commented out), then json.Unmarshal's the body into
// structs.ReceiptResponse ignoring the error, and returns err == nil.
// testkit.GoReceiptResponse, GoSubReceipt and GoItem copy the shapes of
// structs/pos3.go's ReceiptResponse, Receipt and Item.

// goReceiptSend does what the Go client's ReceiptSend does with an answer,
// and also reports the decode error the client drops, so the test can
// check that every body parses.
func goReceiptSend(t *testing.T, base, body string) (testkit.GoReceiptResponse, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/rest/receipt", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Add("Content-type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var resp testkit.GoReceiptResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return resp, fmt.Errorf("HTTP %d %s: %w", res.StatusCode, raw, err)
	}
	require.Contains(t, []string{"SUCCESS", "PAYMENT", "ERROR"}, resp.Status, "HTTP %d %s", res.StatusCode, raw)
	return resp, nil
}

// issuedByPOS is how a POS that knows only PosAPI's two envelopes decides
// that a sale was issued: any status but ERROR is printed.
func issuedByPOS(r testkit.GoReceiptResponse) bool { return r.Status != "ERROR" }

func TestUnmodifiedGoClientNeverSeesAQueuedReceiptAsIssued(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 7})
	cfg := testConfig(t, s.URL())
	cfg.Accept.QueuedAnswer = config.QueuedAnswerError
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()

	// Online: the tax service's own answer, printed as issued.
	online, err := goReceiptSend(t, d.URL(), testkit.Receipt("go1"))
	require.NoError(t, err, "every body parses as PosAPI's")
	require.True(t, issuedByPOS(online))
	require.Equal(t, "SUCCESS", online.Status)
	require.Equal(t, s.Receipts()[0].Lottery, online.Lottery)

	// Offline: the cashier sees the error path every time they try.
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	for range 3 {
		r, err := goReceiptSend(t, d.URL(), testkit.Receipt("go2"))
		require.NoError(t, err, "every body parses as PosAPI's")
		require.False(t, issuedByPOS(r), "a queued receipt read as issued: %+v", r)
		require.Contains(t, r.Message, "Do NOT ring this sale again")
		require.Empty(t, r.ID)
	}

	// Back online: the same request, sent again, gets the real answer.
	require.NoError(t, s.SetFaults(sim.Faults{}))
	var r testkit.GoReceiptResponse
	require.Eventually(t, func() bool {
		r, err = goReceiptSend(t, d.URL(), testkit.Receipt("go2"))
		require.NoError(t, err, "every body parses as PosAPI's")
		return issuedByPOS(r)
	}, 15*time.Second, 50*time.Millisecond)
	issued := s.Receipts()
	require.Len(t, issued, 2, "each sale issued once")
	require.Equal(t, "SUCCESS", r.Status)
	require.Equal(t, issued[1].ID, r.ID)
	require.Equal(t, issued[1].Lottery, r.Lottery)
	require.Equal(t, issued[1].QRData, r.QrData)
}

// The negative control: in "202" mode the same client reads a queued
// receipt as issued, with no id, lottery or QR data. This is why "error"
// exists.
func TestUnmodifiedGoClientMisreadsA202(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 8})
	require.NoError(t, s.SetFaults(sim.Faults{Down: true}))
	d, err := daemon.New(testConfig(t, s.URL()), zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	res, body := post(t, d.URL(), testkit.Receipt("go3"))
	require.Equal(t, http.StatusAccepted, res.StatusCode, "%s", body)
	var r testkit.GoReceiptResponse
	require.NoError(t, json.Unmarshal(body, &r))
	require.True(t, issuedByPOS(r), "the client takes the 202 for an issued receipt")
	require.Empty(t, r.Lottery)
	require.Empty(t, r.QrData)
}

// A refusal whose body is not JSON (a proxy's HTML page) still reaches the
// client as PosAPI's error envelope, with the tax service's status code.
func TestUnmodifiedGoClientParsesANonJSONRefusal(t *testing.T) {
	t.Parallel()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "<html><body>403 Forbidden by proxy</body></html>")
	}))
	t.Cleanup(up.Close)
	cfg := testConfig(t, up.URL)
	cfg.Accept.QueuedAnswer = config.QueuedAnswerError
	d, err := daemon.New(cfg, zaptest.NewLogger(t), "test")
	require.NoError(t, err)
	stop := run(t, d)
	defer func() { require.NoError(t, stop()) }()
	res, body := post(t, d.URL(), testkit.Receipt("go4"))
	require.Equal(t, http.StatusForbidden, res.StatusCode, "%s", body)
	r, err := goReceiptSend(t, d.URL(), testkit.Receipt("go4"))
	require.NoError(t, err, "every body parses as PosAPI's")
	require.False(t, issuedByPOS(r))
	require.Contains(t, r.Message, "HTTP 403")
}
