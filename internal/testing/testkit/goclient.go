package testkit

// GoReceiptResponse, GoSubReceipt and GoItem are the response structs of
// the published Go client github.com/techpartners-asia/ebarimt-pos3-go
// (structs/pos3.go's ReceiptResponse, Receipt and Item at commit
// 11b0479df465a0e50af3c6153f46f42c1163f516, MIT licence; constants.* types
// are strings there), for the tests that decode answers as a POS running
// that client does.
type GoReceiptResponse struct {
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
	Receipts     []GoSubReceipt `json:"receipts"`
	PosID        float64        `json:"posId"`
	Status       string         `json:"status"`
	Message      string         `json:"message"`
	QrData       string         `json:"qrData"`
	Lottery      string         `json:"lottery"`
	Date         string         `json:"date"`
	Easy         bool           `json:"easy"`
}

// GoSubReceipt is structs/pos3.go's Receipt.
type GoSubReceipt struct {
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
	Items         []GoItem    `json:"items"`
}

// GoItem is structs/pos3.go's Item.
type GoItem struct {
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
