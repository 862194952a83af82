package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/sim"
)

// outageLoop is demo's outage script: after o.outageAfter the simulator
// goes down for o.outage; a receipt posted meanwhile is queued (202), and
// once the simulator is back the log shows it sent. It returns when done
// or when ctx ends.
func outageLoop(ctx context.Context, log *zap.Logger, s *sim.Sim, api string, o demoOptions) {
	if !sleepCtx(ctx, o.outageAfter) {
		return
	}
	log.Warn("outage: the simulated tax service goes down", zap.Duration("for", o.outage))
	if err := s.SetFaults(sim.Faults{Down: true, DownFor: o.outage}); err != nil {
		log.Error("outage: could not take the simulator down", zap.Error(err))
		return
	}
	if !sleepCtx(ctx, min(2*time.Second, o.outage/2)) {
		return
	}
	suffix := fmt.Sprintf("%06d", time.Now().Unix()%1000000)
	code, id, err := postReceipt(ctx, api, sampleReceipt(suffix))
	if err != nil {
		log.Error("outage: posting a receipt to receiptd failed", zap.Error(err))
		return
	}
	log.Info("outage: receipt posted while the tax service is down", zap.Int("httpStatus", code), zap.String("queueId", id))
	deadline := time.Now().Add(o.outage + 30*time.Second)
	for time.Now().Before(deadline) {
		if !sleepCtx(ctx, time.Second) {
			return
		}
		state, upID, err := entryState(ctx, api, id)
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

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

var demoHTTP = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{Proxy: nil}}

// postReceipt sends body to POST /rest/receipt; it returns the status code
// and the X-Queue-Id header.
func postReceipt(ctx context.Context, api string, body []byte) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", api+"/rest/receipt", bytes.NewReader(body))
	if err != nil {
		return 0, "", fmt.Errorf("post receipt: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := demoHTTP.Do(req)
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
func entryState(ctx context.Context, api, id string) (queue.State, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", api+"/receiptd/entries/"+id, nil)
	if err != nil {
		return "", "", fmt.Errorf("get entry: %w", err)
	}
	resp, err := demoHTTP.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("get entry: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("get entry: %s", resp.Status)
	}
	var e queue.Entry
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&e); err != nil {
		return "", "", fmt.Errorf("get entry: %w", err)
	}
	id = ""
	if e.Outcome != nil {
		id = e.Outcome.ID
	}
	return e.State, id, nil
}
