package client_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

// TestStockQrForwardsHeaders: getStockQr goes to the stock base URL with
// the forwarded Authorization; without it the simulator's 401 comes back
// as a Rejected error with the answer.
func TestStockQrForwardsHeaders(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Options{})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:1", LookupBaseURL: "http://127.0.0.1:1",
		StockBaseURL: s.URL(), Timeout: 5 * time.Second})
	require.NoError(t, err)
	q := url.Values{"stockQr": {"BF6B1FBA86FB4C41ADDBB01C09C024F5"}}

	raw, err := c.Get(context.Background(), client.OpStockQr, q)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Rejected, cl)
	require.Equal(t, 401, raw.StatusCode)

	ctx := client.WithForward(context.Background(), http.Header{"Authorization": {"Bearer pos-token"}})
	raw, err = c.Get(ctx, client.OpStockQr, q)
	require.NoError(t, err)
	require.Contains(t, string(raw.Body), `"barcode":"8656170014754"`)
	require.Equal(t, 2, s.Requests(sim.RouteStockQr))

	none, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL()})
	require.NoError(t, err)
	_, err = none.Get(ctx, client.OpStockQr, q)
	require.ErrorIs(t, err, client.ErrNotConfigured, "no stock base URL")
}

// TestSaveOprMerchants: the body goes to the lookup base URL as it is,
// with the X-API-KEY forwarded; a refusal comes back with its answer.
func TestSaveOprMerchants(t *testing.T) {
	t.Parallel()
	s, c := simClient(t)
	body := []byte(`{"posNo":"10005299","merchantTins":["77001059076"]}`)
	raw, err := c.SaveOprMerchants(context.Background(), body)
	cl, _ := client.ClassOf(err)
	require.Equal(t, client.Rejected, cl, "no X-API-KEY")
	require.Equal(t, 401, raw.StatusCode)

	ctx := client.WithForward(context.Background(), http.Header{"X-Api-Key": {"k"}})
	raw, err = c.SaveOprMerchants(ctx, body)
	require.NoError(t, err)
	require.Contains(t, string(raw.Body), `"status":200`)
	require.Equal(t, 2, s.Requests(sim.RouteSaveMerchants))

	_, err = c.Get(ctx, client.OpSaveMerchants, nil)
	require.ErrorIs(t, err, client.ErrBadOp, "a POST is not a Get")
}
