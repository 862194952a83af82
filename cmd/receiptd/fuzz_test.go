package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// FuzzParseDate: -from / -to never panic, and a range that parses is
// non-empty and includes its start.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"2026-01-31", "2026-02-30", "2026-01-31T18:00:00+08:00",
		"2026-01-31T18:00:00.123456789Z", "0000-01-01", "9999-12-31", "", "2026-1-1", "2026-01-31T24:00:00Z"} {
		f.Add(s, "2026-12-31")
	}
	ub := time.FixedZone("UB", 8*3600)
	f.Fuzz(func(t *testing.T, from, to string) {
		start, end, err := exportRange(from, to, ub)
		if err != nil {
			return
		}
		require.True(t, start.Before(end))
	})
}

// FuzzCSVRecord: whatever the daemon says about an entry, its csv row has
// every column and reads back as written; only a spreadsheet-formula start
// gets a quote mark, and a CR inside a cell is the one thing encoding/csv
// reads back as LF.
func FuzzCSVRecord(f *testing.F) {
	for _, s := range fakeEntries {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"queueId":"Q1","kind":"delete","outcome":{"message":"-1+2\r\nx"},"deleteId":"@x"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e queue.Entry
		if json.Unmarshal(data, &e) != nil {
			return
		}
		row := csvRecord(e)
		require.Len(t, row, len(csvHeader))
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		require.NoError(t, w.Write(row))
		w.Flush()
		require.NoError(t, w.Error())
		back, err := csv.NewReader(&buf).ReadAll()
		require.NoError(t, err)
		require.Len(t, back, 1)
		for i := range row {
			want := row[i]
			if strings.ContainsAny(want, "\"\n,\r") || strings.HasPrefix(want, " ") {
				want = strings.ReplaceAll(want, "\r\n", "\n")
			}
			require.Equal(t, want, back[0][i], "column %s", csvHeader[i])
		}
	})
}
