package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/datadir"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

const testToken = "0123456789abcdef-token"

// fakeEntries are what the fake daemon lists, in queueId order; numbers
// and spacing as a daemon might write them, to show they pass untouched.
var fakeEntries = []string{
	`{"queueId":"Q000000000001","kind":"receipt","state":"sent","acceptedAt":"2026-01-31T15:59:59.999999999Z",` +
		`"updatedAt":"2026-01-31T16:00:01Z","body":{"totalAmount":12500.50},"merchantTin":"37900846788","posNo":"POS-1",` +
		`"billIdSuffix":"000001","attempts":[{"at":"2026-01-31T16:00:00Z","durationNs":5,"result":"success"}],` +
		`"outcome":{"status":"SUCCESS","id":"123456789012345678901234567890123","date":"2026-02-01 00:00:00"}}`,
	`{"queueId":"Q000000000002","kind":"receipt","state":"rejected","acceptedAt":"2026-01-31T16:00:00Z",` +
		`"updatedAt":"2026-01-31T16:00:01Z","body":{"totalAmount":1e2},"merchantTin":"37900846788","posNo":"POS-1",` +
		`"billIdSuffix":"000002","attempts":[{"at":"2026-01-31T16:00:00Z","durationNs":5,"result":"rejected"}],` +
		`"attemptsDropped":3,"outcome":{"status":"ERROR","message":"=HYPERLINK(\"x\"), totals, \"quoted\"\nsecond line"}}`,
	`{"queueId":"Q000000000003","kind":"delete","state":"delete_queued","acceptedAt":"2026-02-01T10:00:00Z",` +
		`"updatedAt":"2026-02-01T10:00:00Z","attempts":[],"deleteId":"999","deleteDate":"2026-01-31 10:00:00","outcome":null}`,
	`{"queueId":"Q000000000004","kind":"receipt","state":"queued","acceptedAt":"2026-02-01T16:00:00Z",` +
		`"updatedAt":"2026-02-01T16:00:00Z","body":{"totalAmount":1},"merchantTin":"1","posNo":"2","billIdSuffix":"3",` +
		`"attempts":[{"at":"2026-02-01T16:00:01Z","durationNs":5,"result":"transient","error":"connection refused"}],"outcome":null}`,
}

// fakeDaemon serves GET /receiptd/entries in pages of pageSize with the
// daemon's cursor rules, demanding the bearer token. It counts requests.
func fakeDaemon(t *testing.T, pageSize int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("GET /receiptd/entries", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"status":"ERROR","message":"missing or wrong bearer token"}`))
			return
		}
		limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
		require.NoError(t, err)
		limit = min(limit, pageSize)
		start := 0
		if after := r.URL.Query().Get("after"); after != "" {
			n, err := strconv.Atoi(strings.TrimLeft(after[1:], "0"))
			require.NoError(t, err)
			start = n
		}
		end := min(start+limit, len(fakeEntries))
		next := ""
		if end < len(fakeEntries) {
			next = "Q" + strings.Repeat("0", 11) + strconv.Itoa(end)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"entries":[` + strings.Join(fakeEntries[start:end], ",\n  ") + `],"next":"` + next + `"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestExportJSONL(t *testing.T) {
	t.Parallel()
	srv, calls := fakeDaemon(t, 2)
	code, stdout, stderr := runCLI(t, "export", "-addr", srv.URL, "-token", testToken,
		"-from", "2026-01-31T16:00:00Z", "-to", "2026-02-01T16:00:00Z")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, int32(2), calls.Load(), "two pages of two")
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 3, "entries 2, 3 and 4: both ends included, 1 is a nanosecond early")
	for i, line := range lines {
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, []byte(fakeEntries[i+1])))
		require.Equal(t, want.String(), line, "written exactly as the daemon wrote it")
	}
	require.Contains(t, lines[0], `"totalAmount":1e2`)
	require.Contains(t, stderr, "exported 3 entries")
}

func TestExportCSV(t *testing.T) {
	t.Parallel()
	srv, _ := fakeDaemon(t, 3)
	code, stdout, stderr := runCLI(t, "export", "-addr", srv.URL, "-token", testToken, "-format", "csv",
		"-from", "2026-01-01T00:00:00Z", "-to", "2026-02-01T10:00:00Z")
	require.Equal(t, exitOK, code, stderr)
	rows, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	require.NoError(t, err)
	require.Equal(t, [][]string{
		csvHeader,
		{"Q000000000001", "receipt", "sent", "2026-01-31T15:59:59.999999999Z", "37900846788", "POS-1", "000001",
			"123456789012345678901234567890123", "2026-02-01 00:00:00", "", "1"},
		{"Q000000000002", "receipt", "rejected", "2026-01-31T16:00:00Z", "37900846788", "POS-1", "000002",
			"", "", "'=HYPERLINK(\"x\"), totals, \"quoted\"\nsecond line", "4"},
		{"Q000000000003", "delete", "delete_queued", "2026-02-01T10:00:00Z", "", "", "", "999",
			"2026-01-31 10:00:00", "", "0"},
	}, rows)
	require.NotContains(t, stdout, "lottery")
	require.NotContains(t, stdout, "qrData")
}

func TestExportDateOnlyRangeIsWholeDays(t *testing.T) {
	t.Parallel()
	ub := time.FixedZone("UB", 8*3600)
	from, to, err := exportRange("2026-02-01", "2026-02-01", ub)
	require.NoError(t, err)
	require.Equal(t, "2026-01-31T16:00:00Z", from.UTC().Format(time.RFC3339Nano))
	require.Equal(t, "2026-02-01T16:00:00Z", to.UTC().Format(time.RFC3339Nano), "to is exclusive: the next midnight")
}

func TestExportNeedsTheToken(t *testing.T) {
	t.Parallel()
	srv, _ := fakeDaemon(t, 2)
	code, _, stderr := runCLI(t, "export", "-addr", srv.URL, "-token", "wrong-token-wrong",
		"-from", "2026-01-01", "-to", "2026-12-31")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "401 Unauthorized: missing or wrong bearer token")
}

func TestEntriesPagesUpToLimit(t *testing.T) {
	t.Parallel()
	srv, calls := fakeDaemon(t, 2)
	code, stdout, stderr := runCLI(t, "entries", "-addr", srv.URL, "-token", testToken, "-limit", "3")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, int32(2), calls.Load())
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 4)
	require.Contains(t, lines[2], "Q000000000002")
	require.Contains(t, lines[2], "=HYPERLINK")
	require.Contains(t, lines[2], `"quoted" second line`, "messages stay on one row")
	require.Contains(t, stderr, "more: receiptd entries -after Q000000000003")

	code, stdout, stderr = runCLI(t, "entries", "-addr", srv.URL, "-token", testToken, "-json", "-after", "Q000000000002")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, 2, strings.Count(stdout, "\n"))
	require.True(t, strings.HasPrefix(stdout, `{"queueId":"Q000000000003"`))
	require.Empty(t, stderr)
}

func TestEntriesTakesAddressAndTokenFromConfig(t *testing.T) {
	srv, _ := fakeDaemon(t, 10)
	t.Setenv("RECEIPTD_AUTH_TOKEN", "") // restored after the test
	require.NoError(t, os.Unsetenv("RECEIPTD_AUTH_TOKEN"))
	cfg := writeFile(t, "c.toml", "listen = \""+strings.TrimPrefix(srv.URL, "http://")+"\"\n[auth]\ntoken = \""+testToken+"\"\n")
	code, stdout, stderr := runCLI(t, "entries", "-config", cfg)
	require.Equal(t, exitOK, code, stderr)
	require.Contains(t, stdout, "Q000000000004")
}

func TestRetry(t *testing.T) {
	t.Parallel()
	var gotCT string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /receiptd/entries/{id}/retry", func(w http.ResponseWriter, r *http.Request) {
		gotCT = r.Header.Get("Content-Type")
		if r.PathValue("id") != "Q000000000002" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"status":"ERROR","message":"no such entry"}`))
			return
		}
		_, _ = w.Write([]byte(`{"queueId":"Q000000000002","kind":"receipt","state":"queued","attempts":[]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	code, stdout, stderr := runCLI(t, "retry", "-addr", srv.URL, "-token", "t", "Q000000000002")
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, "Q000000000002: queued\n", stdout)
	require.Equal(t, "application/json", gotCT, "the daemon refuses a POST without it")

	code, _, stderr = runCLI(t, "retry", "-addr", srv.URL, "-token", "t", "Q000000000009")
	require.Equal(t, exitFailure, code)
	require.Contains(t, stderr, "404 Not Found: no such entry")
}

// backupServer serves body as GET /receiptd/backup; cut makes it break the
// connection after the body, as the daemon does when a backup fails.
func backupServer(t *testing.T, body []byte, cut bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/receiptd/backup", r.URL.Path)
		if cut { // promise more than comes, then break the connection
			w.Header().Set("Content-Length", strconv.Itoa(len(body)*2))
			_, _ = w.Write(body)
			panic(http.ErrAbortHandler)
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestBackup(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "src.db")
	st, err := store.Open(dbPath, store.Options{})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	db, err := os.ReadFile(dbPath)
	require.NoError(t, err)

	t.Run("complete copy", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(db) }))
		defer srv.Close()
		out := filepath.Join(t.TempDir(), "backup.db")
		require.NoError(t, os.WriteFile(out, []byte("older backup"), 0o600))
		code, _, stderr := runCLI(t, "backup", "-addr", srv.URL, "-token", "t", out)
		require.Equal(t, exitUsage, code, "an existing file is not overwritten without -force")
		require.Contains(t, stderr, "pass -force")
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, "older backup", string(got))
		code, stdout, stderr := runCLI(t, "backup", "-addr", srv.URL, "-token", "t", "-force", out)
		require.Equal(t, exitOK, code, stderr)
		require.Contains(t, stdout, "backup written and checked")
		got, err = os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, db, got)
		require.NoFileExists(t, datadir.PartialName(out))
	})
	for name, srv := range map[string]*httptest.Server{
		"cut short":  backupServer(t, db[:len(db)/2], true),
		"not a bolt": backupServer(t, bytes.Repeat([]byte("x"), 8192), false),
		"empty":      backupServer(t, nil, false), // bbolt would make it a new, empty database
		"foreign":    backupServer(t, storetest.ForeignBolt(t), false),
	} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "backup.db")
			require.NoError(t, os.WriteFile(out, []byte("older backup"), 0o600))
			code, _, stderr := runCLI(t, "backup", "-addr", srv.URL, "-token", "t", "-force", out)
			require.Equal(t, exitFailure, code)
			require.Contains(t, stderr, "backup")
			got, err := os.ReadFile(out)
			require.NoError(t, err)
			require.Equal(t, "older backup", string(got), "the old file stays until a good copy replaces it")
			require.NoFileExists(t, datadir.PartialName(out))
		})
	}
}

// TestExportDaysInAcceptTimezone: a YYYY-MM-DD day is the tax day, in
// accept.timezone, whatever the machine's zone (on a UTC machine a day's
// receipts were once missing from its export).
func TestExportDaysInAcceptTimezone(t *testing.T) {
	old := time.Local
	time.Local = time.UTC // the machine's zone, which must not matter
	t.Cleanup(func() { time.Local = old })
	srv, _ := fakeDaemon(t, 10)
	ids := func(stdout string) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
			var e struct{ QueueID string }
			require.NoError(t, json.Unmarshal([]byte(line), &e))
			out = append(out, e.QueueID)
		}
		return out
	}
	args := []string{"export", "-addr", srv.URL, "-token", testToken, "-from", "2026-02-01", "-to", "2026-02-01"}

	ub := writeFile(t, "ub.toml", "[accept]\ntimezone = \"Asia/Ulaanbaatar\"\n")
	code, stdout, stderr := runCLI(t, append(args, "-config", ub)...)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"Q000000000002", "Q000000000003"}, ids(stdout), "00:00 to 24:00 in Ulaanbaatar")
	require.Equal(t, "exported 2 entries accepted from 2026-02-01T00:00:00+08:00 to 2026-02-02T00:00:00+08:00 "+
		"(days in Asia/Ulaanbaatar)\n", stderr)

	code, stdout, stderr = runCLI(t, append(args, "-timezone", "UTC")...)
	require.Equal(t, exitOK, code, stderr)
	require.Equal(t, []string{"Q000000000003", "Q000000000004"}, ids(stdout))
	require.Equal(t, "exported 2 entries accepted from 2026-02-01T00:00:00Z to 2026-02-02T00:00:00Z (days in UTC)\n", stderr)

	code, _, stderr = runCLI(t, append(args, "-timezone", "Mars/Olympus")...)
	require.Equal(t, exitUsage, code)
	require.Equal(t, "receiptd export: -timezone \"Mars/Olympus\": not an IANA time zone like Asia/Ulaanbaatar\n"+
		"usage: receiptd export -from DATE -to DATE [-format jsonl|csv] [-addr URL] [-token T]\n", stderr)
}
