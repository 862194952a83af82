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
// goReceiptResponse, goSubReceipt and goItem copy the shapes of
// structs/pos3.go's ReceiptResponse, Receipt and Item (constants.* types
// are strings there).
type goReceiptResponse struct {
	ID           string         `json:"id"`
	Version      string         `json:"version"`
	TotalAmount  float64        `json:"totalAmount"`
	TotalVat     float64        `json:"totalVat"`
	TotalCityTax float64        `json:"totalCityTax"`
	BranchNo     string         `json:"branchNo"`
	DistrictCode string         `json:"districtCode"`
	MerchantTIN  string         `json:"merchantTin"`
	PosNo        string         `json:"posNo"`
	CustomerTIN  string         `json:"customerTin"`
	ConsumerNo   string         `json:"consumerNo"`
	Type         string         `json:"type"`
	InvoiceID    string         `json:"invoiceId"`
	Receipts     []goSubReceipt `json:"receipts"`
	PosID        float64        `json:"posId"`
	Status       string         `json:"status"`
	Message      string         `json:"message"`
	QrData       string         `json:"qrData"`
	Lottery      string         `json:"lottery"`
	Date         string         `json:"date"`
	Easy         bool           `json:"easy"`
}

type goSubReceipt struct {
	ID            string      `json:"id"`
	BankAccountId int         `json:"bankAccountId"`
	TotalAmount   float64     `json:"totalAmount"`
	TotalVat      float64     `json:"totalVat"`
	TotalCityTax  float64     `json:"totalCityTax"`
	TaxType       string      `json:"taxType"`
	MerchantTin   string      `json:"merchantTin"`
	CustomerTin   string      `json:"customerTin"`
	BankAccountNo string      `json:"bankAccountNo"`
	IBan          string      `json:"iBan"`
	Data          interface{} `json:"data"`
	Items         []goItem    `json:"items"`
}

type goItem struct {
	Name               string      `json:"name"`
	BarCode            string      `json:"barCode"`
	BarCodeType        string      `json:"barCodeType"`
	ClassificationCode string      `json:"classificationCode"`
	TaxProductCode     string      `json:"taxProductCode"`
	MeasureUnit        string      `json:"measureUnit"`
	Qty                float64     `json:"qty"`
	UnitPrice          float64     `json:"unitPrice"`
	TotalBonus         float64     `json:"totalBonus"`
	TotalVat           float64     `json:"totalVat"`
	TotalCityTax       float64     `json:"totalCityTax"`
	TotalAmount        float64     `json:"totalAmount"`
	Data               interface{} `json:"data"`
}

// goReceiptSend does what the Go client's ReceiptSend does with an answer,
// and also reports the decode error the client drops, so the test can
// check that every body parses.
func goReceiptSend(t *testing.T, base, body string) (goReceiptResponse, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/rest/receipt", bytes.NewReader([]byte(body)))
	require.NoError(t, err)
	req.Header.Add("Content-type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var resp goReceiptResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return resp, fmt.Errorf("HTTP %d %s: %w", res.StatusCode, raw, err)
	}
	require.Contains(t, []string{"SUCCESS", "PAYMENT", "ERROR"}, resp.Status, "HTTP %d %s", res.StatusCode, raw)
	return resp, nil
}

// issuedByPOS is how a POS that knows only PosAPI's two envelopes decides
// that a sale was issued: any status but ERROR is printed.
func issuedByPOS(r goReceiptResponse) bool { return r.Status != "ERROR" }

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
	var r goReceiptResponse
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
	var r goReceiptResponse
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
