package control

import (
	"bytes"
	"context"
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/update"
)

func testDownloader(t *testing.T) *downloader {
	t.Helper()
	d, err := newDownloader(config.Control{}, t.TempDir())
	require.NoError(t, err)
	return d
}

func fetchAll(t *testing.T, d *downloader, raw string, sum []byte) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.fetch(ctx, raw, sum, func(int64, int64) {})
}

// TestFetchResumesWhereItStopped: a download cut off halfway keeps what
// arrived; the next attempt asks for the rest (Range) and the file is
// whole; a server that ignores the range sends it all again and the file
// is still whole, never doubled.
func TestFetchResumesWhereItStopped(t *testing.T) {
	t.Parallel()
	body := bytes.Repeat([]byte("receiptd "), 20000)
	sum := sha256.Sum256(body)
	var cut atomic.Bool
	cut.Store(true)
	var ranges []string
	ignoreRange := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ranges = append(ranges, r.Header.Get("Range"))
		if cut.CompareAndSwap(true, false) {
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		if ignoreRange {
			r.Header.Del("Range")
		}
		http.ServeContent(w, r, "receiptd", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	d := testDownloader(t)

	_, err := fetchAll(t, d, srv.URL+"/receiptd", sum[:])
	require.Error(t, err, "cut off")
	path, err := fetchAll(t, d, srv.URL+"/receiptd", sum[:])
	require.NoError(t, err)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, body, got)
	require.Len(t, ranges, 2)
	require.Empty(t, ranges[0])
	require.Regexp(t, `^bytes=\d+-$`, ranges[1], "the rest asked for")
	require.NotEqual(t, "bytes=0-", ranges[1])

	path, err = fetchAll(t, d, srv.URL+"/receiptd", sum[:])
	require.NoError(t, err, "whole already: 416 for the range past its end")
	got, _ = os.ReadFile(path)
	require.Equal(t, body, got)

	ignoreRange = true
	require.NoError(t, os.WriteFile(path, body[:100], 0o640))
	_, err = fetchAll(t, d, srv.URL+"/receiptd", sum[:])
	require.NoError(t, err)
	got, _ = os.ReadFile(path)
	require.Equal(t, body, got, "a 200 to a range starts the file again")
}

// TestFetchRefuses: URLs off https (but loopback), a file over
// update.MaxFile (unread), a disk that would be left without room, a
// redirect off https, and an error status each end the download with a
// clear error.
func TestFetchRefuses(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256([]byte("x"))
	d := testDownloader(t)
	for _, raw := range []string{"http://192.0.2.1/receiptd", "http://localhost:1/receiptd", "ftp://127.0.0.1/receiptd",
		"https://user:pw@example.com/receiptd", "/receiptd", "https:///receiptd"} {
		_, err := fetchAll(t, d, raw, sum[:])
		require.ErrorIs(t, err, errDownloadURL, raw)
	}

	// The two servers below say their size and send nothing: the till
	// refuses on the size before reading, and a handler writing to a
	// client that stopped reading can block its server's Close (Wine).
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(update.MaxFile+1, 10))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(huge.Close)
	_, err := fetchAll(t, d, huge.URL, sum[:])
	require.ErrorContains(t, err, "more than")

	small := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(10<<20))
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(small.Close)
	full := testDownloader(t)
	full.free = func(string) (fileutil.Space, error) { return fileutil.Space{Free: 200 << 20, Total: 1 << 30}, nil }
	_, err = fetchAll(t, full, small.URL, sum[:])
	require.ErrorContains(t, err, "not enough free space")

	redirect := httptest.NewServer(http.RedirectHandler("http://192.0.2.1/receiptd", http.StatusFound))
	t.Cleanup(redirect.Close)
	_, err = fetchAll(t, d, redirect.URL, sum[:])
	require.ErrorIs(t, err, errDownloadURL)

	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	_, err = fetchAll(t, d, missing.URL+"/receiptd?token=s3cret", sum[:])
	require.ErrorContains(t, err, "404")
	require.NotContains(t, err.Error(), "s3cret", "a signed URL's query is not repeated")
}

// FuzzCheckDownloadURL: whatever a head office sends as download_url,
// the check does not panic, and what it lets through is https://, or
// http:// to a loopback address, without credentials.
func FuzzCheckDownloadURL(f *testing.F) {
	for _, s := range []string{"https://h/r", "http://127.0.0.1:8/r", "http://[::1]/r", "http://localhost/r",
		"https://u:p@h/r", "HTTPS://H/R", "http://127.0.0.1.evil/r", "", "%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if checkDownloadURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		require.NoError(t, err)
		require.Nil(t, u.User)
		require.NotEmpty(t, u.Host)
		if u.Scheme != "https" {
			require.Equal(t, "http", u.Scheme)
			require.True(t, config.IsLoopbackURL(raw), raw)
			require.False(t, strings.EqualFold(u.Hostname(), "localhost"))
		}
	})
}
