package sim_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/sim"
)

func TestSampleReceiptIsIssued(t *testing.T) {
	t.Parallel()
	s := start(t, sim.Options{Seed: 1})
	body := sim.SampleReceipt("POS-9", "000123")
	require.True(t, json.Valid(body))
	code, _, answer, err := do(t, "POST", s.URL()+"/rest/receipt", string(body))
	require.NoError(t, err)
	require.Equal(t, 200, code, "%s", answer)
	issued := s.Receipts()
	require.Len(t, issued, 1)
	require.Equal(t, "SUCCESS", issued[0].Status)
	require.Equal(t, "POS-9", issued[0].PosNo)
	require.Equal(t, "000123", issued[0].BillIDSuffix)
	require.Equal(t, sim.SampleMerchantTin, issued[0].MerchantTin)
}
