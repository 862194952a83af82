package sim

import "fmt"

// SampleMerchantTin is the merchant TIN of SampleReceipt; the simulator
// knows it (merchant info answers for it).
const SampleMerchantTin = "37900846788"

// SampleReceipt is a valid B2C create request whose totals add up exactly,
// as the simulator (and the real service) demand: one line of two loaves,
// paid partly in cash and partly by card. posNo and billIdSuffix vary, so
// callers can make distinct receipts. The demo prints it; tests and the
// benchmark post it.
func SampleReceipt(posNo, billIDSuffix string) []byte {
	return fmt.Appendf(nil, `{"branchNo":"001","totalAmount":12500.50,"totalVAT":1136.41,"totalCityTax":0,`+
		`"districtCode":"0102","merchantTin":%q,"posNo":%q,"type":"B2C_RECEIPT",`+
		`"billIdSuffix":%q,"receipts":[{"totalAmount":12500.50,"taxType":"VAT_ABLE",`+
		`"merchantTin":%q,"totalVAT":1136.41,"totalCityTax":0,"items":[{"name":"Bread",`+
		`"barCode":"4900000000001","barCodeType":"GS1","classificationCode":"2349010","measureUnit":"pcs",`+
		`"qty":2,"unitPrice":6250.25,"totalVAT":1136.41,"totalCityTax":0,"totalAmount":12500.50}]}],`+
		`"payments":[{"code":"CASH","status":"PAID","paidAmount":500.50},`+
		`{"code":"PAYMENT_CARD","status":"PAID","paidAmount":12000}]}`,
		SampleMerchantTin, posNo, billIDSuffix, SampleMerchantTin)
}
