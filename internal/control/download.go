package control

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	taxclient "github.com/receiptd/receiptd/internal/client"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/update"
)

// stallTimeout ends a download that received nothing for this long; the
// next attempt resumes it.
const stallTimeout = time.Minute

// maxRedirects bounds the redirects a download follows (a release is
// often served through a CDN that redirects); each must stay on https://.
const maxRedirects = 5

// downloadRoom is the free space a download leaves on the data
// directory's disk: the database and its log come first.
const downloadRoom = 256 << 20

// errDownloadURL: a release offered at a URL the till does not fetch
// from.
var errDownloadURL = errors.New("the release's download_url must be https:// (plain http:// only to 127.0.0.1 or ::1)")

// checkDownloadURL refuses a URL that is neither https:// nor plain
// http:// to loopback: the file's signature is checked anyway, but a
// download in clear over the shop's network would tell anyone on it
// which version the till is about to run.
func checkDownloadURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil, u.Host == "", u.User != nil:
		return errDownloadURL
	case u.Scheme == "https", u.Scheme == "http" && config.IsLoopbackURL(raw):
		return nil
	}
	return errDownloadURL
}

// downloader fetches releases through [control]'s CA file and proxy.
type downloader struct {
	hc      *http.Client
	dataDir string
	// free reports the free bytes of the data directory's disk; nil:
	// fileutil.DiskSpace.
	free func(dir string) (fileutil.Space, error)
}

func newDownloader(ctl config.Control, dataDir string) (*downloader, error) {
	tr, err := taxclient.NewTransport(taxclient.TransportOptions{
		CAFile: ctl.CAFile, Proxy: ctl.Proxy, MaxIdleConns: 1, MaxIdleConnsPerHost: 1,
		IdleConnTimeout: 30 * time.Second, MaxResponseHeaderBytes: 64 << 10,
	})
	if err != nil {
		return nil, fmt.Errorf("control: control.ca_file or control.proxy: %w", err)
	}
	tr.ResponseHeaderTimeout = stallTimeout
	tr.DisableCompression = true // the bytes that arrive are the file's
	hc := &http.Client{Transport: tr, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		return checkDownloadURL(req.URL.String())
	}}
	return &downloader{hc: hc, dataDir: dataDir}, nil
}

// fetch downloads the file offered with SHA-256 sum from raw into
// layout.Download, resuming what an earlier attempt left there (an HTTP
// Range request; a server that ignores it sends the whole file again),
// and returns its path. It reads at most update.MaxFile bytes, stops when
// nothing arrives for stallTimeout, and refuses a file that would leave
// the data directory's disk with less than downloadRoom free. progress
// is told the bytes held and the total, when known. The file is not
// checked here: release.Till.Take checks what it copies.
func (d *downloader) fetch(ctx context.Context, raw string, sum []byte, progress func(have, total int64)) (string, error) {
	if err := checkDownloadURL(raw); err != nil {
		return "", err
	}
	path := layout.Download(d.dataDir, hex.EncodeToString(sum))
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return "", err
	}
	defer f.Close()
	have, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}
	if have > update.MaxFile {
		have = 0
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return "", err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("download %s: %w", redact(raw), err)
	}
	defer resp.Body.Close()
	total := int64(-1)
	switch {
	case resp.StatusCode == http.StatusPartialContent && have > 0:
		if resp.ContentLength >= 0 {
			total = have + resp.ContentLength
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && have > 0:
		return path, nil // the whole file was here already
	case resp.StatusCode == http.StatusOK:
		have, total = 0, resp.ContentLength
		if err := f.Truncate(0); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("download %s: the server answered %s", redact(raw), resp.Status)
	}
	if _, err := f.Seek(have, io.SeekStart); err != nil {
		return "", err
	}
	if total > update.MaxFile {
		return "", fmt.Errorf("the release is %d bytes, more than %d", total, int64(update.MaxFile))
	}
	if err := d.room(total - have); err != nil {
		return "", err
	}
	// A read that waits stallTimeout for its first byte ends the request.
	stall := time.AfterFunc(stallTimeout, cancel)
	defer stall.Stop()
	buf := make([]byte, 64<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		stall.Reset(stallTimeout)
		if n > 0 {
			if have+int64(n) > update.MaxFile {
				return "", fmt.Errorf("the release is more than %d bytes", int64(update.MaxFile))
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return "", err
			}
			have += int64(n)
			progress(have, total)
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return "", fmt.Errorf("download %s: %w (%d bytes kept; the next attempt resumes)", redact(raw), rerr, have)
		}
	}
	if total >= 0 && have != total {
		return "", fmt.Errorf("download %s: %d bytes of %d", redact(raw), have, total)
	}
	return path, f.Sync()
}

// room refuses a download of more bytes than leave downloadRoom free on
// the data directory's disk (unknown sizes count as update.MaxFile).
func (d *downloader) room(more int64) error {
	if more < 0 {
		more = update.MaxFile
	}
	free := d.free
	if free == nil {
		free = fileutil.DiskSpace
	}
	sp, err := free(d.dataDir)
	if err != nil {
		return nil // no figure (ErrSpaceUnknown): the write fails by itself when full
	}
	if sp.Free < uint64(more)+downloadRoom {
		return fmt.Errorf("not enough free space for the release: %d MiB free, it needs %d MiB and %d MiB left for receipts",
			sp.Free>>20, more>>20, downloadRoom>>20)
	}
	return nil
}

// redact is a URL as a message may show it: without its query, which
// may hold a signed token.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the release's URL"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
