package client_test

import (
	"context"
	"testing"

	"github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/sim"
)

// BenchmarkCreateReceiptSim: one create over loopback HTTP against the
// simulator, a fresh connection each time (go test -bench=. ./internal/client).
func BenchmarkCreateReceiptSim(b *testing.B) {
	s := sim.New(sim.Options{})
	if err := s.Start("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c, err := client.New(client.Config{BaseURL: s.URL()})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(validReceipt)
	for b.Loop() {
		if _, err := c.CreateReceipt(context.Background(), body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeReceipt decodes a create answer as the simulator writes
// it (986 bytes, as PosAPI 3.0's: items echoed, lottery and QR data), by
// DecodeReceipt's scan and by encoding/json alone (its reference):
//
//	go test -run XXX -bench DecodeReceipt -benchmem ./internal/client
func BenchmarkDecodeReceipt(b *testing.B) {
	body := []byte(`{"branchNo":"001","date":"2026-11-29 06:49:08","districtCode":"0102","easy":false,"id":"719166955561680557986490152436113",` +
		`"lottery":"SN 37790768","merchantTin":"37900846788","message":"","payments":[{"code":"CASH","paidAmount":500.50,"status":"PAID"},` +
		`{"code":"PAYMENT_CARD","paidAmount":12000,"status":"PAID"}],"posId":57471409,"posNo":"B1","qrData":"9423468024131285693320042274801422274085543602655333619402255240378619512823054100122026731895824393813567629754741406` +
		`39","receipts":[{"bankAccountId":0,"id":"955276867907480191617121840466482","items":[{"barCode":"4900000000001","barCodeType":"GS1",` +
		`"classificationCode":"2349010","measureUnit":"pcs","name":"Bread","qty":2,"totalAmount":12500.50,"totalCityTax":0,"totalVAT":1136.41,` +
		`"unitPrice":6250.25}],"merchantTin":"37900846788","taxType":"VAT_ABLE","totalAmount":12500.50,"totalCityTax":0,"totalVAT":1136.41}],` +
		`"status":"SUCCESS","totalAmount":12500.50,"totalCityTax":0,"totalVAT":1136.41,"type":"B2C_RECEIPT","version":"3.2.39"}`)
	for name, decode := range map[string]func([]byte) (*client.Receipt, error){"scan": client.DecodeReceipt, "encoding-json": client.DecodeReceiptJSON} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if r, err := decode(body); err != nil || r.ID == "" || len(r.SubReceipts) != 1 {
					b.Fatal(r, err)
				}
			}
		})
	}
}
