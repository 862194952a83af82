// Package testkit is the fixtures and helpers the tests of several packages
// share, so that they do not drift apart: a valid receipt, a running tax
// service simulator, a loopback address nobody listens on, an entry as GET
// /receiptd/entries/{queueId} shows it, every entry of a running daemon
// (ListEntries, GetJSON), a buffer to read while a goroutine writes it
// (SyncBuffer), the published Go client's receipt answer
// (GoReceiptResponse), a clock the test moves (ManualClock), a shop's
// forward proxy (StartProxy), and the real daemon under test (the binary
// built once, started with a configuration, stopped at the end). Only tests
// import it.
package testkit

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
)

// CustomerTIN is the customer identifier in Receipt, for tests that check
// it never reaches a log unmasked.
const CustomerTIN = "88776655443"

// Receipt is a create request the simulator accepts, for the bill number
// suffix given: its totals add up exactly, and its money has more digits
// than a float64 holds (12345.6789012345678901), so a test that finds the
// number unchanged upstream shows that nothing parsed it into a float. It
// carries CustomerTIN.
func Receipt(suffix string) string {
	return fmt.Sprintf(`{"branchNo":"001","totalAmount":12345.6789012345678901,"merchantTin":"5317878","posNo":"P1",
"type":"B2C_RECEIPT","billIdSuffix":%q,"totalVat":1,"districtCode":"2501","customerTin":%q,
"receipts":[{"totalAmount":12345.6789012345678901,"taxType":"VAT_ABLE","totalVAT":1,"merchantTin":"5317878","bankAccountNo":"5012345678",
 "items":[{"name":"a","measureUnit":"ш","qty":1,"unitPrice":0.1,"totalAmount":0.1},
          {"name":"b","measureUnit":"ш","qty":1,"unitPrice":12345.5789012345678901,"totalAmount":12345.5789012345678901}]}],
"payments":[{"code":"CASH","status":"PAID","paidAmount":12345.6789012345678901}]}`, suffix, CustomerTIN)
}

// StartSim starts the tax service simulator on 127.0.0.1:0 and closes it
// when the test ends.
func StartSim(t testing.TB, o sim.Options) *sim.Sim {
	t.Helper()
	s := sim.New(o)
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// ClosedAddr is a loopback address nobody listens on (harness.FreeAddr):
// connecting to it is refused at once.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	addr, err := harness.FreeAddr()
	require.NoError(t, err)
	return addr
}

// Entry is GET /receiptd/entries/{queueId} as the tests read it.
type Entry struct {
	QueueID   string `json:"queueId"`
	State     string `json:"state"`
	Kind      string `json:"kind"`
	Ambiguous int    `json:"ambiguousAttempts"`
	Outcome   *struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"outcome"`
	Attempts []struct {
		Result     string `json:"result"`
		Error      string `json:"error"`
		HTTPStatus int    `json:"httpStatus"`
	} `json:"attempts"`
}

// GetEntry reads entry id from the daemon at base (http://host:port); any
// answer but 200 fails the test.
func GetEntry(t testing.TB, base, id string) Entry {
	t.Helper()
	resp, err := http.Get(base + "/receiptd/entries/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET entry %s", id)
	var e Entry
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	return e
}
