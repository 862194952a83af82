package demo

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
)

// outageLoop is the demo's outage script: after o.OutageAfter the
// simulator goes down for o.Outage; a receipt posted meanwhile is queued
// (202), and once the simulator is back the log shows it sent. The other
// faults in force stay: a rejection asked for before the outage is still
// pending after it. It talks
// to the daemon through c, which carries auth.token when one is in force.
// It returns when done or when ctx ends.
func outageLoop(ctx context.Context, log *zap.Logger, s *sim.Sim, c *apiclient.Client, o Options) {
	if !clock.Sleep(ctx, o.OutageAfter) {
		return
	}
	log.Warn("outage: the simulated tax service goes down", zap.Duration("for", o.Outage))
	if _, err := s.UpdateFaults(func(f *sim.Faults) error { f.Down, f.DownFor = true, o.Outage; return nil }); err != nil {
		log.Error("outage: could not take the simulator down", zap.Error(err))
		return
	}
	if !clock.Sleep(ctx, min(2*time.Second, o.Outage/2)) {
		return
	}
	suffix := fmt.Sprintf("%06d", time.Now().Unix()%1000000)
	code, id, err := postReceipt(ctx, c, SampleReceipt(suffix))
	if err != nil {
		log.Error("outage: posting a receipt to receiptd failed", zap.Error(err))
		return
	}
	log.Info("outage: receipt posted while the tax service is down", zap.Int("httpStatus", code), zap.String("queueId", id))
	deadline := time.Now().Add(o.Outage + 30*time.Second)
	for time.Now().Before(deadline) {
		if !clock.Sleep(ctx, time.Second) {
			return
		}
		state, upID, err := entryState(ctx, c, id)
		if err != nil {
			log.Warn("outage: reading the entry", zap.String("queueId", id), zap.Error(err))
			continue
		}
		if state == queue.StateSent {
			log.Info("recovered: the receipt queued during the outage was sent", zap.String("queueId", id), zap.String("upstreamId", upID))
			return
		}
	}
	log.Warn("outage: the queued receipt was not sent within the outage plus 30s", zap.String("queueId", id))
}

var demoHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

// postReceipt sends body to c's POST /rest/receipt; it returns the status
// code and the X-Queue-Id header.
func postReceipt(ctx context.Context, c *apiclient.Client, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", c.Base+"/rest/receipt", bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("post receipt: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("post receipt: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.Header.Get("X-Queue-Id") == "" {
		return resp.StatusCode, "", fmt.Errorf("post receipt: answered %s without X-Queue-Id", resp.Status)
	}
	return resp.StatusCode, resp.Header.Get("X-Queue-Id"), nil
}

// entryState reads an entry's state and upstream id.
func entryState(ctx context.Context, c *apiclient.Client, id string) (queue.State, string, error) {
	var e queue.Entry
	if err := c.GetJSON(ctx, http.MethodGet, "/receiptd/entries/"+url.PathEscape(id), &e); err != nil {
		return "", "", err
	}
	if e.Outcome == nil {
		return e.State, "", nil
	}
	return e.State, e.Outcome.ID, nil
}
