package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// PosAPIStats is what the PosAPI watcher reports at each scrape; a nil
// figure is unknown and its series is left out (not reported as 0).
type PosAPIStats struct {
	LeftLotteries      *float64 // receiptd_posapi_left_lotteries
	LastSentAgeSeconds *float64 // receiptd_posapi_last_sent_age_seconds
	ClockSkewSeconds   *float64 // receiptd_clock_skew_seconds: the tax service's clock minus ours
	// SendDataOK and SendDataFailed count receiptd's own sendData calls
	// (receiptd_send_data_total{result="ok"|"failed"}).
	SendDataOK, SendDataFailed uint64
	// PacePerHour is PosAPI's lotteries an hour, all its clients together
	// (receiptd_posapi_lottery_pace_per_hour); OwnShare the share of them
	// that is this till's (receiptd_posapi_own_share).
	PacePerHour, OwnShare *float64
	// PosAPI is the posapi label of the receiptd_posapi_* series and
	// receiptd_send_data_total: PosAPI's posNo, else the upstream's host
	// and port, so rules can alert once per PosAPI that many tills share.
	PosAPI string
}

// WatchPosAPI makes every scrape call f for the PosAPI series:
//
//	posapi_left_lotteries{posapi}          gauge    PosAPI's lottery reserve as last known
//	posapi_last_sent_age_seconds{posapi}   gauge    age of PosAPI's lastSentDate
//	posapi_lottery_pace_per_hour{posapi}   gauge    PosAPI's lotteries an hour, all its clients
//	posapi_own_share{posapi}               gauge    the share of that pace that is this till's
//	clock_skew_seconds                     gauge    the tax service's clock minus ours
//	send_data_total{posapi,result}         counter  receiptd's own sendData calls: ok, failed
//
// The first call registers the collector; a later call replaces f, and
// nil stops reporting (the series disappear).
func (m *Metrics) WatchPosAPI(f func() PosAPIStats) {
	if m == nil {
		return
	}
	m.posapiOnce.Do(func() { m.reg.MustRegister(m.posapi) })
	m.posapi.set(f)
}

// posapiLabel names the PosAPI a series is about: many tills share one.
var posapiLabel = []string{"posapi"}

type posapiCollector struct {
	watched[func() PosAPIStats]
	carried counters[map[string][2]uint64] // sendData ok, failed of the daemons before, by posapi label

	left, age, pace, share, skew, sendData *prometheus.Desc
}

func newPosAPICollector() *posapiCollector {
	return &posapiCollector{
		left: prometheus.NewDesc(namespace+"_posapi_left_lotteries",
			"PosAPI's lottery reserve (leftLotteries of /rest/info, less the B2C receipts issued since); B2C receipts are refused at 0.", posapiLabel, nil),
		age: prometheus.NewDesc(namespace+"_posapi_last_sent_age_seconds",
			"Age of PosAPI's last send of its data to the tax authority (lastSentDate of /rest/info).", posapiLabel, nil),
		pace: prometheus.NewDesc(namespace+"_posapi_lottery_pace_per_hour",
			"Lottery numbers PosAPI issued an hour over the last hour, all its clients together (the fall of leftLotteries between reads, refills cut out).", posapiLabel, nil),
		share: prometheus.NewDesc(namespace+"_posapi_own_share",
			"The share (0 to 1) of PosAPI's lottery pace that is this till's B2C receipts; below 1 when other tills share the PosAPI.", posapiLabel, nil),
		skew: prometheus.NewDesc(namespace+"_clock_skew_seconds",
			"The tax service's clock (Date headers, receipt dates) minus this computer's, in seconds.", nil, nil),
		sendData: prometheus.NewDesc(namespace+"_send_data_total",
			"receiptd's own GET /rest/sendData calls by result (ok, failed).", []string{"posapi", "result"}, nil),
	}
}

func (c *posapiCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.left
	ch <- c.age
	ch <- c.pace
	ch <- c.share
	ch <- c.skew
	ch <- c.sendData
}

func (c *posapiCollector) Collect(ch chan<- prometheus.Metric) {
	f := c.get()
	if f == nil {
		return
	}
	st := f()
	for _, g := range []struct {
		d *prometheus.Desc
		v *float64
	}{{c.left, st.LeftLotteries}, {c.age, st.LastSentAgeSeconds}, {c.pace, st.PacePerHour}, {c.share, st.OwnShare}} {
		if g.v != nil {
			ch <- prometheus.MustNewConstMetric(g.d, prometheus.GaugeValue, *g.v, st.PosAPI)
		}
	}
	if st.ClockSkewSeconds != nil {
		ch <- prometheus.MustNewConstMetric(c.skew, prometheus.GaugeValue, *st.ClockSkewSeconds)
	}
	base := c.carried.get()[st.PosAPI]
	ch <- prometheus.MustNewConstMetric(c.sendData, prometheus.CounterValue, float64(st.SendDataOK+base[0]), st.PosAPI, "ok")
	ch <- prometheus.MustNewConstMetric(c.sendData, prometheus.CounterValue, float64(st.SendDataFailed+base[1]), st.PosAPI, "failed")
}
