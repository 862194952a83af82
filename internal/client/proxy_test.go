package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// TestProxyCarriesOnlyLookups: with upstream.proxy set and PosAPI and the
// lookup API on the same host (the simulator on loopback), every lookup
// goes through the proxy and no PosAPI request does; receipts reach the
// simulator directly.
func TestProxyCarriesOnlyLookups(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 5})
	proxy := testkit.StartProxy(t)
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: s.URL(), Proxy: proxy.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	ctx := context.Background()

	rec, err := c.CreateReceipt(ctx, []byte(validReceipt))
	require.NoError(t, err)
	_, err = c.DeleteReceipt(ctx, rec.ID, rec.Date)
	require.NoError(t, err)
	_, err = c.Info(ctx)
	require.NoError(t, err)
	_, err = c.SendData(ctx)
	require.NoError(t, err)
	_, err = c.BankAccounts(ctx, "5317878")
	require.NoError(t, err)
	require.Len(t, s.Receipts(), 1, "the create reached the simulator")
	require.Equal(t, []string{rec.ID}, s.Deleted())
	require.Empty(t, proxy.Requests(), "no PosAPI request goes through the lookup proxy")

	_, err = c.BranchInfo(ctx)
	require.NoError(t, err)
	_, err = c.ProductTaxCodes(ctx)
	require.NoError(t, err)
	_, err = c.MerchantInfo(ctx, "37900846788")
	require.NoError(t, err)
	_, err = c.TinInfo(ctx, "2712345")
	require.NoError(t, err)
	_, err = c.Classification(ctx, "1")
	require.NoError(t, err)
	require.Equal(t, []string{
		"GET /api/info/check/getBranchInfo",
		"GET /api/receipt/receipt/getProductTaxCode",
		"GET /api/info/check/getInfo",
		"GET /api/info/check/getTinInfo",
		"GET /api/info/check/barcode/v2/1",
	}, proxy.Requests(), "every lookup goes through the proxy, loopback or not")
	require.Equal(t, 1, s.Requests(sim.RouteBranchInfo))
}

// TestLookupProxyRefused: a lookup through a proxy that refuses connections
// is NotSent (the target's name is never resolved here), and the same
// client's receipts are not affected.
func TestLookupProxyRefused(t *testing.T) {
	t.Parallel()
	s := testkit.StartSim(t, sim.Options{Seed: 6})
	c, err := client.New(client.Config{BaseURL: s.URL(), LookupBaseURL: "https://tax.example",
		Proxy: "http://" + testkit.ClosedAddr(t), Timeout: 5 * time.Second})
	require.NoError(t, err)
	_, err = c.BranchInfo(context.Background())
	var e *client.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, client.NotSent, e.Class, "%v", err)
	require.Equal(t, client.OpBranchInfo, e.Op)

	_, err = c.CreateReceipt(context.Background(), []byte(validReceipt))
	require.NoError(t, err)
	require.Len(t, s.Receipts(), 1)
}
