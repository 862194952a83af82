package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/daemon"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// BenchmarkAccept posts receipts through the whole daemon with
// "Prefer: wait=0" and the upstream unreachable: validation, idempotency
// and a durable enqueue per request, one client.
//
//	go test -run '^$' -bench Accept -cpuprofile cpu.out ./internal/daemon/
func BenchmarkAccept(b *testing.B) {
	d, err := daemon.New(testConfig(b, "http://127.0.0.1:1"), zap.NewNop(), "bench")
	require.NoError(b, err)
	stop := run(b, d)
	defer func() { require.NoError(b, stop()) }()
	url := d.URL() + "/rest/receipt"
	b.ResetTimer()
	for i := range b.N {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(testkit.Receipt(fmt.Sprintf("b%08d", i))))
		require.NoError(b, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Prefer", "wait=0")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// BenchmarkAcceptParallel is BenchmarkAccept with 64 clients at once.
func BenchmarkAcceptParallel(b *testing.B) {
	d, err := daemon.New(testConfig(b, "http://127.0.0.1:1"), zap.NewNop(), "bench")
	require.NoError(b, err)
	stop := run(b, d)
	defer func() { require.NoError(b, stop()) }()
	url := d.URL() + "/rest/receipt"
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64
	var n atomic.Int64
	b.SetParallelism(32) // 64 clients on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := testkit.Receipt(fmt.Sprintf("p%08d", n.Add(1)))
			req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Prefer", "wait=0")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}
