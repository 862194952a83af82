package harness

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseVmRSS(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    int64
		wantErr bool
	}{
		{"typical", "Name:\treceiptd\nVmPeak:\t  9000 kB\nVmRSS:\t   12345 kB\nThreads: 5\n", 12345 * 1024, false},
		{"zero", "VmRSS:\t0 kB\n", 0, false},
		{"missing", "Name:\tkthreadd\n", 0, true},
		{"bad unit", "VmRSS:\t12 MB\n", 0, true},
		{"bad number", "VmRSS:\tx kB\n", 0, true},
		{"negative", "VmRSS:\t-5 kB\n", 0, true},
		{"overflows in bytes", "VmRSS:\t9007199270000000 kB\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tt.in))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte("VmRSS:\t   12345 kB\n"))
	f.Add([]byte("Name:\tx\nVmRSS: 1 kB"))
	f.Add([]byte("VmRSS:"))
	f.Add([]byte("VmRSS:\t99999999999999999999 kB\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseVmRSS(b)
		if err == nil && n < 0 {
			t.Fatalf("negative rss %d from %q", n, b)
		}
	})
}
