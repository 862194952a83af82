package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// GetJSON GETs u with c and decodes its 200 answer into v; any other
// status is an error naming u.
func GetJSON(ctx context.Context, c *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: status %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("get %s: decode: %w", u, err)
	}
	return nil
}

// ListEntries reads every entry of the daemon at base, page by page
// (GET /receiptd/entries), decoded as E, in FIFO order.
func ListEntries[E any](ctx context.Context, c *http.Client, base string) ([]E, error) {
	var all []E
	for after := ""; ; {
		var page struct {
			Entries []E    `json:"entries"`
			Next    string `json:"next"`
		}
		if err := GetJSON(ctx, c, base+"/receiptd/entries?limit=1000&after="+url.QueryEscape(after), &page); err != nil {
			return nil, err
		}
		all = append(all, page.Entries...)
		if page.Next == "" {
			return all, nil
		}
		after = page.Next
	}
}

// SyncBuffer collects what a goroutine writes (a child process's output,
// a JSON log) for a test to read while it is still written.
type SyncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
