package soak_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/receiptd/receiptd/internal/clock"
	"github.com/receiptd/receiptd/internal/sim"
)

// tally is what the POS clients saw.
type tally struct {
	mu sync.Mutex
	// receipts: queueId answered 2xx → billIdSuffix.
	receipts map[string]string
	// deletes: queueId answered 2xx to a delete → the id it asked to delete.
	deletes    map[string]string
	replays    int // duplicate submissions answered as replays
	retries    int // re-posts after a transport error or a 5xx
	deleteReqs int
	phases     int
	failures   []string
}

func (t *tally) fail(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failures = append(t.failures, fmt.Sprintf(format, args...))
}

// pos is one till: it posts receipts one after another, like a cashier.
// Even-numbered tills send an Idempotency-Key; odd ones rely on the key
// receiptd derives from merchantTin, posNo, billIdSuffix and the day.
type pos struct {
	id   int
	url  string
	rng  *rand.Rand
	http *http.Client
	tal  *tally
}

func newPOS(id int, seed int64, url string, tal *tally) *pos {
	return &pos{id: id, url: url, tal: tal,
		rng:  rand.New(rand.NewPCG(uint64(seed), uint64(100+id))),
		http: &http.Client{Timeout: 10 * time.Second}}
}

// answer is a 2xx answer.
type answer struct {
	code     int
	queueID  string
	replayed bool
	body     []byte
}

// run posts receipts until load ends. A receipt in progress when load ends
// is still carried to a 2xx (under ctx), so every receipt the till started
// is accounted for.
func (p *pos) run(load, ctx context.Context) {
	for n := 0; load.Err() == nil; n++ {
		suffix := fmt.Sprintf("p%d-%06d", p.id, n)
		body := string(sim.SampleReceipt(fmt.Sprintf("POS%d", p.id), suffix))
		key := ""
		if p.id%2 == 0 {
			key = "soak-" + suffix
		}
		prefer := ""
		if p.rng.IntN(2) == 0 {
			prefer = "wait=0"
		}
		a, err := p.send(ctx, http.MethodPost, body, key, prefer)
		if err != nil {
			p.tal.fail("post %s: %v", suffix, err)
			return
		}
		p.tal.mu.Lock()
		p.tal.receipts[a.queueID] = suffix
		p.tal.mu.Unlock()
		p.afterAccept(ctx, suffix, body, key, a)
		clock.Sleep(load, time.Duration(20+p.rng.IntN(100))*time.Millisecond)
	}
}

// afterAccept sometimes submits the receipt again and sometimes deletes it,
// by queueId (often still unsent) or by the upstream id (sent).
func (p *pos) afterAccept(ctx context.Context, suffix, body, key string, a answer) {
	if p.rng.Float64() < 0.1 {
		b, err := p.send(ctx, http.MethodPost, body, key, "wait=0")
		switch {
		case err != nil:
			p.tal.fail("duplicate %s: %v", suffix, err)
		case b.queueID != a.queueID || !b.replayed:
			p.tal.fail("duplicate %s: queueId %s replayed=%v, first was %s", suffix, b.queueID, b.replayed, a.queueID)
		default:
			p.tal.mu.Lock()
			p.tal.replays++
			p.tal.mu.Unlock()
		}
	}
	var upstreamID struct {
		ID string `json:"id"`
	}
	if a.code == http.StatusOK {
		_ = json.Unmarshal(a.body, &upstreamID)
	}
	switch r := p.rng.Float64(); {
	case r < 0.08:
		p.delete(ctx, a.queueID)
	case r < 0.16 && upstreamID.ID != "":
		p.delete(ctx, upstreamID.ID)
	}
}

func (p *pos) delete(ctx context.Context, id string) {
	body := fmt.Sprintf(`{"id":%q}`, id)
	prefer := ""
	if p.rng.IntN(2) == 0 {
		prefer = "wait=0"
	}
	a, err := p.send(ctx, http.MethodDelete, body, "", prefer)
	if err != nil {
		p.tal.fail("delete %s: %v", id, err)
		return
	}
	p.tal.mu.Lock()
	defer p.tal.mu.Unlock()
	p.tal.deletes[a.queueID] = id
	p.tal.deleteReqs++
}

// send makes the request until it is answered 2xx: a transport error (a
// crashed receiptd) or a 5xx is retried with the same body and key, as a
// POS does. Any other answer is an error.
func (p *pos) send(ctx context.Context, method, body, key, prefer string) (answer, error) {
	for {
		a, retry, err := p.once(ctx, method, body, key, prefer)
		if !retry {
			return a, err
		}
		p.tal.mu.Lock()
		p.tal.retries++
		p.tal.mu.Unlock()
		clock.Sleep(ctx, time.Duration(50+p.rng.IntN(200))*time.Millisecond)
		if ctx.Err() != nil {
			return answer{}, fmt.Errorf("gave up retrying (last: %v): %w", err, ctx.Err())
		}
	}
}

func (p *pos) once(ctx context.Context, method, body, key, prefer string) (answer, bool, error) {
	req, err := http.NewRequestWithContext(ctx, method, p.url+"/rest/receipt", bytes.NewReader([]byte(body)))
	if err != nil {
		return answer{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	if prefer != "" {
		req.Header.Set("Prefer", prefer)
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return answer{}, true, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, true, err
	}
	switch {
	case resp.StatusCode >= 500:
		return answer{}, true, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return answer{}, false, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	qid := resp.Header.Get("X-Queue-Id")
	if qid == "" {
		return answer{}, false, fmt.Errorf("status %d without X-Queue-Id: %s", resp.StatusCode, b)
	}
	return answer{code: resp.StatusCode, queueID: qid, replayed: resp.Header.Get("Idempotent-Replayed") == "true", body: b}, false, nil
}
