package testkit_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestReceiptIsIssuedThroughTheDaemon: the shared fixture stays a receipt
// the simulator issues, through a daemon under test, and GetEntry reads
// its entry.
func TestReceiptIsIssuedThroughTheDaemon(t *testing.T) {
	s, d := testkit.SimAndDaemon(t, sim.Options{Seed: 3})
	resp, err := http.Post(d.URL()+"/rest/receipt", "application/json", strings.NewReader(testkit.Receipt("kit1")))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	id := resp.Header.Get("X-Queue-Id")
	e := testkit.GetEntry(t, d.URL(), id)
	require.Equal(t, "sent", e.State)
	require.Equal(t, id, e.QueueID)
	require.Len(t, s.Receipts(), 1)
	require.Contains(t, string(s.Receipts()[0].Body), "12345.6789012345678901", "the number is forwarded as written")

	_, err = http.Get("http://" + testkit.ClosedAddr(t))
	require.Error(t, err, "nobody listens on ClosedAddr")
}
