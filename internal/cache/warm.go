package cache

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/client"
)

// maxWarmTINs bounds the TINs taken from /rest/info; a till has a handful.
const maxWarmTINs = 200

// warmRounds returns the warm set's rounds as of what is stored now.
//
// Warm-up: a till that has been online once has every list it needs
// offline. The warm set is built in rounds, each from what the one before
// stored: the global lists (district codes, product tax codes), PosAPI's
// /rest/info and the classification's top level; then the merchant info of
// every TIN /rest/info lists (its merchants and their customers, as a POS
// asks getInfo for the buyer before a sale) and of every TIN noted on a
// receipt, the bank accounts of its merchants, and the classification's
// second level. Run refreshes each entry of it when its refresh interval
// has passed, and Warmth reports what is missing.
func (c *Cache) warmRounds() [2][]lookup {
	first := []lookup{{op: client.OpBranchInfo}, {op: client.OpProductTaxCode},
		{op: client.OpInfo}, {op: client.OpClassification}}
	c.tinMu.Lock()
	noted := make([]string, 0, len(c.tins))
	for tin := range c.tins {
		noted = append(noted, tin)
	}
	c.tinMu.Unlock()
	info, _ := c.storedBody(lookup{op: client.OpInfo})
	top, _ := c.storedBody(lookup{op: client.OpClassification})
	return [2][]lookup{first, secondRound(info, top, noted)}
}

// secondRound builds the warm set's second round from the stored
// /rest/info and classification top level (either may be nil or anything
// at all: they came from outside) and the noted TINs: bank accounts of the
// merchants, merchant info of every TIN, the classification below each top
// code. Invalid parameters are left out.
func secondRound(info, top []byte, noted []string) []lookup {
	var out []lookup
	seen := map[string]bool{}
	add := func(lk lookup, err error) {
		if err == nil && !seen[lk.key()] {
			seen[lk.key()] = true
			out = append(out, lk)
		}
	}
	merchants, tins := infoTINs(info)
	for _, tin := range merchants {
		add(paramLookup(client.OpBankAccounts, "tin", []string{tin}))
	}
	for _, tin := range append(tins, noted...) {
		add(paramLookup(client.OpMerchantInfo, "tin", []string{tin}))
	}
	for _, code := range classTop(top) {
		add(classLookup([]string{code}))
	}
	return out
}

// infoTINs reads a /rest/info answer: its merchants' TINs, and every TIN
// it names (merchants and their customers), at most maxWarmTINs each.
func infoTINs(body []byte) (merchants, all []string) {
	var info struct {
		Merchants []struct {
			TIN       string `json:"tin"`
			Customers []struct {
				TIN string `json:"tin"`
			} `json:"customers"`
		} `json:"merchants"`
	}
	if json.Unmarshal(body, &info) != nil {
		return nil, nil
	}
	for _, m := range info.Merchants {
		if len(all) >= maxWarmTINs {
			break
		}
		merchants = append(merchants, m.TIN)
		all = append(all, m.TIN)
		for _, cu := range m.Customers {
			all = append(all, cu.TIN)
		}
	}
	return merchants, all[:min(len(all), maxWarmTINs)]
}

// classTop reads a classification answer's rows: their codes, at most
// maxWarmTINs.
func classTop(body []byte) []string {
	var rows [][]string
	if json.Unmarshal(body, &rows) != nil {
		return nil
	}
	var codes []string
	for _, r := range rows {
		if len(r) > 0 && len(codes) < maxWarmTINs {
			codes = append(codes, r[0])
		}
	}
	return codes
}

// storedBody returns lk's stored answer, if it is indexed and readable.
func (c *Cache) storedBody(lk lookup) ([]byte, bool) {
	if !c.indexed(lk.key()) {
		return nil, false
	}
	rec, err := c.read(lk)
	if err != nil || rec == nil {
		return nil, false
	}
	return rec.body, true
}

func (c *Cache) indexed(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.index[key]
	return ok
}

// warmUp fetches every lookup of the warm set that is missing or due, round
// by round, and reports whether none failed.
func (c *Cache) warmUp(ctx context.Context) bool {
	var fetched, failed int
	var lastErr error
	for round := range 2 {
		for _, lk := range c.warmRounds()[round] {
			if ctx.Err() != nil {
				return false
			}
			if !c.due(lk) {
				continue
			}
			fetched++
			if res := c.fetch(ctx, ctx, lk); res.err != nil {
				failed++
				lastErr = res.err
			}
		}
	}
	c.mu.Lock()
	c.warmedAt = c.now()
	c.mu.Unlock()
	c.logWarmUp(fetched, failed, lastErr)
	return failed == 0
}

// logWarmUp says at Info when the warm-up starts failing and when it is
// complete again; the rounds in between (every refreshRetry while
// offline, the normal case) are Debug.
func (c *Cache) logWarmUp(fetched, failed int, lastErr error) {
	was := c.warmFailing
	c.warmFailing = failed > 0
	switch {
	case failed > 0 && !was:
		c.log.Info("cache warm-up incomplete; serving what is cached, retrying quietly until it is complete",
			zap.Int("fetched", fetched), zap.Int("failed", failed), zap.Error(lastErr))
	case failed > 0:
		c.log.Debug("cache warm-up still incomplete", zap.Int("fetched", fetched), zap.Int("failed", failed), zap.Error(lastErr))
	case was:
		c.log.Info("cache warm-up complete", zap.Int("fetched", fetched))
	case fetched > 0:
		c.log.Debug("cache warm-up done", zap.Int("fetched", fetched))
	}
}

// Warmth is whether the till could work offline now.
type Warmth struct {
	// Wanted is the size of the warm set as known now (it grows once
	// /rest/info and the classification's top level are stored).
	Wanted int
	// Missing names the lookups of the warm set not cached, as
	// "merchant_info 5317878"; empty when all are.
	Missing []string
	// LastRun is when the last warm-up round ended; zero before the first.
	LastRun time.Time
	// Kinds are the kinds of lookup (operations, as Freshness names them)
	// the warm set holds, in warm-up order; the other kinds are cached
	// only when the POS asks.
	Kinds []string
}

// Warmth reports what of the warm set is cached. It reads the store for
// /rest/info and the classification's top level, and asks nothing
// upstream.
func (c *Cache) Warmth() Warmth {
	var w Warmth
	for _, round := range c.warmRounds() {
		for _, lk := range round {
			w.Wanted++
			if !slices.Contains(w.Kinds, string(lk.op)) {
				w.Kinds = append(w.Kinds, string(lk.op))
			}
			if !c.indexed(lk.key()) {
				name := string(lk.op)
				if lk.param != "" {
					name += " " + lk.param
				}
				w.Missing = append(w.Missing, name)
			}
		}
	}
	c.mu.Lock()
	w.LastRun = c.warmedAt
	c.mu.Unlock()
	return w
}
