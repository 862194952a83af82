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

func BenchmarkDecodeReceipt(b *testing.B) {
	body := []byte(`{"status":"SUCCESS","id":"123456789012345678901234567890123","posId":10012345,
		"date":"2024-01-02 03:04:05","lottery":"SN 12345678","qrData":"1234567890","totalAmount":12345.6789012345678901,
		"receipts":[{"id":"223456789012345678901234567890123","bankAccountId":1000,"items":[{"name":"a","qty":1}]}]}`)
	for b.Loop() {
		if _, err := client.DecodeReceipt(body); err != nil {
			b.Fatal(err)
		}
	}
}
