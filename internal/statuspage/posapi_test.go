package statuspage

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func posapiData(change func(p *PosAPI)) Data {
	d := emptyData()
	left := int64(5000)
	skew := 2 * time.Second
	p := &PosAPI{LeftLotteries: &left, PerHour: 12, LastSentDate: "2026-11-22 21:00:00", LastSentAge: time.Hour,
		ClockSkew: &skew, SkewSource: "lookup", AutoSendData: true, MinLotteries: 200, SendEvery: time.Hour,
		MaxClockSkew: 2 * time.Minute}
	change(p)
	d.PosAPI = p
	return d
}

func TestPosAPIAttention(t *testing.T) {
	onOS(t, "linux")
	for _, tc := range []struct {
		name   string
		data   Data
		want   []string // in this order
		absent []string
	}{{
		name:   "healthy",
		data:   posapiData(func(*PosAPI) {}),
		want:   []string{"✓ Nothing needs attention"},
		absent: []string{"lottery", "clock"},
	}, {
		name: "lotteries low, receiptd asked",
		data: posapiData(func(p *PosAPI) {
			left := int64(36)
			p.LeftLotteries, p.RunOutAt = &left, now.Add(3*time.Hour)
			p.Need = "only 36 lottery numbers are left (posapi.min_lotteries = 200)"
			p.LastSendData = &SendData{At: now.Add(-28 * time.Minute), OK: true, Message: "HTTP 200"}
		}),
		// Issue 32, point 4: receiptd's own sendData worked; nothing
		// needs a person (the PosAPI section has the news).
		want:   []string{"✓ Nothing needs attention"},
		absent: []string{"Lotteries run out", "Nothing else is needed"},
	}, {
		name: "lotteries low, auto send off",
		data: posapiData(func(p *PosAPI) {
			left := int64(36)
			p.LeftLotteries, p.RunOutAt, p.AutoSendData = &left, now.Add(3*time.Hour), false
			p.Need = "only 36 lottery numbers are left (posapi.min_lotteries = 200)"
		}),
		want: []string{"Needs attention (1)", "⚠ Lotteries run out in about 3 h at today's pace",
			"PosAPI has 36 lottery numbers left and issues about 12 B2C receipts an hour.",
			"Now: only 36 lottery numbers are left (posapi.min_lotteries = 200).",
			"posapi.auto_send_data is off"},
	}, {
		name: "reserve empty, sendData failing",
		data: posapiData(func(p *PosAPI) {
			left := int64(0)
			p.LeftLotteries, p.RunOutAt = &left, now
			p.Need = "PosAPI refused a B2C receipt because its lottery reserve is empty"
			p.LastSendData = &SendData{At: now.Add(-time.Minute), OK: false, Message: "HTTP 500: could not reach the tax authority"}
		}),
		want: []string{"✗ PosAPI has no lottery numbers left: B2C receipts wait until it has sent its data",
			"receiptd keeps those receipts queued (not refused)",
			"it failed: HTTP 500: could not reach the tax authority",
			"Check this computer's internet connection", "curl -s http://127.0.0.1:7080/rest/sendData"},
	}, {
		name: "auto send off",
		data: posapiData(func(p *PosAPI) {
			p.AutoSendData = false
			p.Need = "PosAPI last sent its data 14h ago (posapi.send_after = 12h0m0s)"
		}),
		want: []string{"⚠ PosAPI should send its data to the tax authority",
			"posapi.auto_send_data is off: receiptd does not ask PosAPI to send its data; a person has to.",
			"curl -s http://127.0.0.1:7080/rest/sendData", "posapi.auto_send_data = true"},
	}, {
		name: "clock skewed",
		data: posapiData(func(p *PosAPI) {
			skew := -5 * time.Minute
			p.ClockSkew = &skew
		}),
		want: []string{"Needs attention (1)", "⚠ This computer's clock is about 5 min ahead of the tax service's clock",
			"More than posapi.max_clock_skew (2m) apart.", "sudo timedatectl set-ntp true", "sudo chronyc makestep"},
		absent: []string{"lottery numbers left"},
	}, {
		name: "a run-out days away is no item",
		data: posapiData(func(p *PosAPI) { p.RunOutAt = now.Add(72 * time.Hour) }),
		want: []string{"✓ Nothing needs attention"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := attentionText(t, tc.data)
			requireInOrder(t, got, tc.want)
			for _, a := range tc.absent {
				require.NotContains(t, got, a)
			}
		})
	}
}

func TestClockStepsOnWindows(t *testing.T) {
	onOS(t, "windows")
	got := attentionText(t, posapiData(func(p *PosAPI) {
		skew := 10 * time.Minute
		p.ClockSkew, p.SkewSource = &skew, "posapi"
	}))
	require.Contains(t, got, "This computer's clock is about 10 min behind PosAPI's clock")
	require.Contains(t, got, "w32tm /resync")
	require.NotContains(t, got, "timedatectl")
}

func TestAbout(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{{30 * time.Second, "a minute"}, {44 * time.Minute, "44 min"}, {170 * time.Minute, "3 h"}, {80 * time.Hour, "3 days"}} {
		require.Equal(t, tc.want, about(tc.d))
	}
}

func TestSharedPosAPIInWords(t *testing.T) {
	pace, share := 21600.0, 0.07
	for _, tc := range []struct {
		name   string
		change func(p *PosAPI)
		want   []string
		absent []string
	}{
		{"not shared: no line", func(*PosAPI) {}, nil, []string{"also serves other tills", `id="posapi-shared"`}},
		{"shared, with its share and pace", func(p *PosAPI) {
			p.Shared, p.OwnShare, p.PacePerHour, p.PosNo = true, &share, &pace, "SIM-001"
		}, []string{"This PosAPI (posNo SIM-001) also serves other tills: 93% of its lottery numbers go to them, about 21600 an hour in all.",
			"one till&#39;s sendData refills it for all"}, []string{"Needs attention"}},
		{"shared, share unknown", func(p *PosAPI) { p.Shared = true }, []string{"This PosAPI also serves other tills. receiptd"}, []string{"%!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			page := render(t, posapiData(tc.change))
			for _, w := range tc.want {
				require.Contains(t, page, w)
			}
			for _, a := range tc.absent {
				require.NotContains(t, page, a)
			}
		})
	}
}

// Issue 32, point 4: a successful automatic sendData is news in the
// PosAPI section, not a card.
func TestPosAPINewsAfterAutomaticSendData(t *testing.T) {
	onOS(t, "linux")
	d := posapiData(func(p *PosAPI) {
		left := int64(50)
		p.LeftLotteries = &left
		p.Need = "only 50 lottery numbers are left (posapi.min_lotteries = 200)"
		p.LastSendData = &SendData{At: now.Add(-time.Minute), OK: true, Message: "HTTP 200"}
	})
	page := text(render(t, d))
	require.Contains(t, page, "Nothing needs attention")
	require.NotContains(t, page, "Needs attention (")
	require.Contains(t, page, "PosAPI has 50 lottery numbers left.")
	require.Contains(t, page, "receiptd asked PosAPI to send its data at 14:29:00 UTC and it answered: HTTP 200. Still due")
	require.Contains(t, page, "nothing is needed from you while that works")
	require.Equal(t, AlertNone, Alert(d))
}

// Issue 32, point 4: every card raises Alert to the card's level, and no
// card leaves it at none: the table in docs/contract.md.
func TestAlertFollowsTheCards(t *testing.T) {
	onOS(t, "linux")
	skew := -5 * time.Minute
	zero := int64(0)
	for _, tc := range []struct {
		name   string
		change func(*Data)
		want   string
	}{
		{"nothing", func(*Data) {}, AlertNone},
		{"clock 5 min off", func(d *Data) { d.PosAPI = posapiData(func(p *PosAPI) { p.ClockSkew = &skew }).PosAPI }, AlertWarn},
		{"reserve empty", func(d *Data) { d.PosAPI = posapiData(func(p *PosAPI) { p.LeftLotteries = &zero }).PosAPI }, AlertCritical},
		{"tax service down", func(d *Data) { d.UpstreamUp = false }, AlertCritical},
		{"held entry", func(d *Data) { d.Counts["held"] = 1 }, AlertWarn},
		{"rejected entry", func(d *Data) { d.Counts["rejected"] = 2 }, AlertWarn},
		{"unsent past warn", func(d *Data) { d.Alert, d.OldestUnsentAge, d.Counts["queued"] = AlertWarn, 25*time.Hour, 1 }, AlertWarn},
		{"disk full", func(d *Data) { d.DiskFull = "no space left on device" }, AlertCritical},
		{"database failed", func(d *Data) { d.DatabaseFailed = "write failed" }, AlertCritical},
		{"snapshot failed", func(d *Data) { d.Backup = &Backup{Dir: "/mnt/usb", LastError: "no space"} }, AlertWarn},
		{"tax service down 7s, critical after 15m", func(d *Data) { outage(d, 7*time.Second, 15*time.Minute) }, AlertWarn},
		{"tax service down 15m, critical after 15m", func(d *Data) { outage(d, 15*time.Minute, 15*time.Minute) }, AlertCritical},
		{"tax service down since a time unknown", func(d *Data) { outage(d, 0, 15*time.Minute); d.UpstreamSince = time.Time{} }, AlertCritical},
		{"tax service down 7s and the reserve empty", func(d *Data) {
			outage(d, 7*time.Second, 15*time.Minute)
			d.PosAPI = posapiData(func(p *PosAPI) { p.LeftLotteries = &zero }).PosAPI
		}, AlertCritical},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := emptyData()
			tc.change(&d)
			require.Equal(t, tc.want, Alert(d))
			require.Equal(t, tc.want, pageAlert(t, render(t, d)), "the page's items show the level alert says")
			if tc.want == AlertNone {
				require.Contains(t, attentionText(t, d), "Nothing needs attention")
			} else {
				require.Contains(t, attentionText(t, d), "Needs attention (")
			}
		})
	}
}

// outage takes the tax service out of reach for the last down, its card
// critical after critical.
func outage(d *Data, down, critical time.Duration) {
	d.UpstreamUp, d.UpstreamSince, d.OutageCritical = false, now.Add(-down), critical
	d.LastError, d.LastErrorAt = "dial tcp 127.0.0.1:7081: connect: connection refused", now.Add(-time.Second)
}

// pageAlert reads the level of the most urgent item the rendered page
// shows under Needs attention (AlertNone: none), and holds the order:
// no warning above a critical item.
func pageAlert(t *testing.T, html string) string {
	t.Helper()
	levels := regexp.MustCompile(`<article class="item (\w+)"`).FindAllStringSubmatch(html, -1)
	if len(levels) == 0 {
		require.Contains(t, html, `<p class="allgood" id="attention">`)
		return AlertNone
	}
	for i := 1; i < len(levels); i++ {
		require.False(t, levels[i][1] == levelCritical && levels[i-1][1] != levelCritical, "a critical item under a warning: %v", levels)
	}
	if levels[0][1] == levelCritical {
		return AlertCritical
	}
	return AlertWarn
}
