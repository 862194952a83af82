package client_test

import (
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "file.pem")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

// validReceipt is a create request the simulator accepts; its numbers are
// not representable in float64.
const validReceipt = `{"branchNo":"001","totalAmount":12345.6789012345678901,"merchantTin":"5317878","posNo":"P1",
"type":"B2C_RECEIPT","billIdSuffix":"000001","inActiveId":"x","totalVat":0,"districtCode":"2501",
"receipts":[{"totalAmount":12345.6789012345678901,"taxType":"NO_VAT","merchantTin":"5317878",
 "items":[{"name":"a","measureUnit":"ш","qty":1,"unitPrice":0.1,"totalAmount":0.1},
          {"name":"b","measureUnit":"ш","qty":1,"unitPrice":12345.5789012345678901,"totalAmount":12345.5789012345678901}]}],
"payments":[{"code":"CASH","status":"PAID","paidAmount":12345.6789012345678901}]}`
