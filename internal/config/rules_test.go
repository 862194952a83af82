package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSkipRules: accept.skip_rules takes the names of the rules in
// receipt's table, and refuses, naming the key, an unknown name and a rule
// of the idempotency key; every problem is reported.
func TestSkipRules(t *testing.T) {
	t.Parallel()
	cfg, err := Load(writeConfig(t, "[accept]\nskip_rules = [\"districtCode.format\", \"payments.required\"]\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"districtCode.format", "payments.required"}, cfg.Accept.SkipRules)
	rs, err := cfg.Accept.Rules()
	require.NoError(t, err)
	_, err = rs.ParseCreate([]byte(`{"branchNo":"1","totalAmount":1,"merchantTin":"2","posNo":"3","type":"B2C_RECEIPT",` +
		`"billIdSuffix":"4","districtCode":"0102 ","receipts":[{"totalAmount":1,"taxType":"NO_VAT","merchantTin":"2",` +
		`"items":[{"name":"a","measureUnit":"ш","qty":1,"unitPrice":1,"totalAmount":1}]}]}`))
	require.NoError(t, err, "the skipped rules are off")

	_, err = Load(writeConfig(t, "[accept]\nskip_rules = [\"districtCode.fromat\", \"posNo.required\"]\n"))
	require.ErrorIs(t, err, ErrInvalid)
	require.ErrorContains(t, err, `accept.skip_rules: unknown rule "districtCode.fromat"`)
	require.ErrorContains(t, err, `; rule "posNo.required" cannot be skipped`)
	require.Empty(t, Default().Accept.SkipRules)
}
