package posapi

import (
	"math"
	"time"

	"github.com/receiptd/receiptd/internal/metrics"
)

// Status is `posapi` in /receiptd/status (docs/contract.md): the figures
// as JSON numbers, null while unknown. The fields marked "-" are for the
// status page.
type Status struct {
	// LeftLotteries is the reserve as last known: leftLotteries less the
	// B2C receipts issued since it was read (0 once PosAPI refused one
	// for an empty reserve).
	LeftLotteries *int64 `json:"leftLotteries"`
	// LastSentDate is as PosAPI wrote it; LastSentAgeSeconds its age.
	LastSentDate       *string `json:"lastSentDate"`
	LastSentAgeSeconds *int64  `json:"lastSentAgeSeconds"`
	// LotteriesRunOutAt is the forecast at PerHour; null when nothing is
	// being spent.
	LotteriesRunOutAt *time.Time `json:"lotteriesRunOutAt"`
	// ClockSkewSeconds is the tax service's clock minus ours.
	ClockSkewSeconds *int64 `json:"clockSkewSeconds"`
	// LastSendData is receiptd's own last sendData call.
	LastSendData *SendData `json:"lastSendData"`
	// PacePerHour is the lotteries PosAPI issued an hour over the last
	// hour, all its clients together (refills cut out); null until the
	// reads of /rest/info span a minute.
	PacePerHour *float64 `json:"pacePerHour"`
	// OwnShare (0 to 1) is the share of that pace that is this till's B2C
	// receipts; null while PosAPI issued none.
	OwnShare *float64 `json:"ownShare"`
	// Shared: other POS software spent PosAPI's reserve in the last 24
	// hours (PosAPI serves other tills too).
	Shared bool `json:"shared"`
	// PosNo is PosAPI's posNo from /rest/info; null until read.
	PosNo *string `json:"posNo"`

	// PerHour is the pace the forecast uses, lotteries an hour: this
	// till's B2C receipts an hour over the last 24 hours, plus the other
	// tills' pace on a shared PosAPI.
	PerHour float64 `json:"-"`
	// Label names PosAPI in the metrics: its posNo, else Config.Upstream.
	Label string `json:"-"`
	// Need is why PosAPI should send its data now ("" when it need not).
	Need string `json:"-"`
	// SkewSource is where ClockSkewSeconds comes from (Source...).
	SkewSource string `json:"-"`
	// InfoError is the last /rest/info read's failure, when it failed
	// after the last good read; InfoAt is when the reserve was read.
	InfoError string    `json:"-"`
	InfoAt    time.Time `json:"-"`
	// The configuration the page words its advice with.
	AutoSendData bool          `json:"-"`
	MinLotteries int           `json:"-"`
	SendAfter    time.Duration `json:"-"`
	SendEvery    time.Duration `json:"-"`
	MaxClockSkew time.Duration `json:"-"`
}

// Status returns what is known now. On a nil *Watcher every figure is
// null.
func (w *Watcher) Status() Status {
	if w == nil {
		return Status{}
	}
	now := w.cfg.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := Status{
		AutoSendData: w.cfg.AutoSendData, MinLotteries: w.cfg.MinLotteries, SendAfter: w.cfg.SendAfter,
		SendEvery: w.cfg.SendEvery, MaxClockSkew: w.cfg.MaxClockSkew,
		Need: w.needLocked(now), InfoError: w.info.failing, InfoAt: w.info.at,
		Shared: w.wide.shared(now), Label: w.labelLocked(),
	}
	if left, ok := w.estLeftLocked(); ok {
		st.LeftLotteries = &left
	}
	perHour, at, ok := w.forecastLocked(now)
	st.PerHour = perHour
	if ok {
		at = at.UTC().Truncate(time.Second)
		st.LotteriesRunOutAt = &at
	}
	if p, ok := w.wide.perHour(now); ok {
		p = math.Round(p*10) / 10
		st.PacePerHour = &p
	}
	if share, ok := w.wide.ownShare(now); ok {
		share = math.Round(share*1000) / 1000
		st.OwnShare = &share
	}
	if w.info.known && w.info.posNo != "" {
		no := w.info.posNo
		st.PosNo = &no
	}
	if w.info.known && w.info.sentRaw != "" {
		raw := w.info.sentRaw
		st.LastSentDate = &raw
		if !w.info.sent.IsZero() {
			age := int64(max(now.Sub(w.info.sent), 0) / time.Second)
			st.LastSentAgeSeconds = &age
		}
	}
	if skew, src, ok := w.skewLocked(now); ok {
		secs := int64(skew.Round(time.Second) / time.Second)
		st.ClockSkewSeconds, st.SkewSource = &secs, src
	}
	if w.send.last != nil {
		last := *w.send.last
		last.At = last.At.UTC()
		st.LastSendData = &last
	}
	return st
}

// stats is what /metrics reads at each scrape.
func (w *Watcher) stats() metrics.PosAPIStats {
	st := w.Status()
	out := metrics.PosAPIStats{}
	if st.LeftLotteries != nil {
		v := float64(*st.LeftLotteries)
		out.LeftLotteries = &v
	}
	if st.LastSentAgeSeconds != nil {
		v := float64(*st.LastSentAgeSeconds)
		out.LastSentAgeSeconds = &v
	}
	if st.ClockSkewSeconds != nil {
		v := float64(*st.ClockSkewSeconds)
		out.ClockSkewSeconds = &v
	}
	out.PacePerHour, out.OwnShare, out.PosAPI = st.PacePerHour, st.OwnShare, st.Label
	w.mu.Lock()
	out.SendDataOK, out.SendDataFailed = w.send.ok, w.send.failed
	w.mu.Unlock()
	return out
}

// labelLocked names PosAPI for the metrics: its posNo once read, else the
// upstream's host and port; mu held.
func (w *Watcher) labelLocked() string {
	if w.info.posNo != "" {
		return w.info.posNo
	}
	return w.cfg.Upstream
}
