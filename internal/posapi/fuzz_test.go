package posapi

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/receiptd/receiptd/internal/client"
)

// FuzzObserveInfo: any /rest/info answer either changes nothing (an
// error) or leaves a reserve that is a number and a status that encodes.
func FuzzObserveInfo(f *testing.F) {
	for _, s := range []string{
		`{"leftLotteries":19992,"lastSentDate":"2026-01-28 15:03:27"}`,
		`{"leftLotteries":0,"lastSentDate":"2026-01-28T07:03:27Z"}`,
		`{"leftLotteries":-5,"lastSentDate":null}`,
		`{"leftLotteries":1e3}`, `{"leftLotteries":"12"}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := New(nil, Config{}, nil, nil)
		err := w.ObserveInfo(body)
		st := w.Status()
		if err != nil && st.LeftLotteries != nil {
			t.Fatalf("a refused answer set the reserve: %s", body)
		}
		if err == nil && (st.LeftLotteries == nil || *st.LeftLotteries < 0) {
			t.Fatalf("an accepted answer left the reserve %v: %s", st.LeftLotteries, body)
		}
		if _, err := json.Marshal(st); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzObserveTiming: any Date header or receipt date gives readings only
// within what a round trip of at most maxRoundTrip allows, and never
// panics.
func FuzzObserveTiming(f *testing.F) {
	f.Add("Sun, 01 Mar 2026 01:55:00 GMT", "2026-03-01 09:55:00", int64(200))
	f.Add("garbage", "2026-03-01T01:59:00+08:00", int64(0))
	f.Add("", "2026-03-01", int64(-5))
	f.Fuzz(func(t *testing.T, date, receiptDate string, rtMillis int64) {
		sent := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
		tm := client.Timing{Op: client.OpCreateReceipt, Sent: sent,
			Received: sent.Add(time.Duration(rtMillis) * time.Millisecond), Date: date, ReceiptDate: receiptDate}
		for _, s := range observe(tm) {
			if rtMillis < 0 || time.Duration(rtMillis)*time.Millisecond > maxRoundTrip {
				t.Fatalf("a reading from a round trip of %d ms", rtMillis)
			}
			if s.source == SourcePosAPI {
				if _, err := http.ParseTime(date); err != nil {
					t.Fatalf("a reading from an unreadable Date %q", date)
				}
			}
		}
	})
}

// FuzzObserveInfoTwice: any two /rest/info answers a minute apart leave
// a pace that is a number not below zero, a share within [0,1], and a
// posNo no longer than a kept message.
func FuzzObserveInfoTwice(f *testing.F) {
	f.Add([]byte(`{"leftLotteries":1000,"lastSentDate":"2026-01-28 15:03:27","posNo":"SIM-001","posId":12345678}`),
		[]byte(`{"leftLotteries":900,"lastSentDate":"2026-01-28 15:03:27","posNo":"SIM-001","posId":12345678}`), uint8(3))
	f.Add([]byte(`{"leftLotteries":10,"posId":"x"}`), []byte(`{"leftLotteries":5000,"posId":1e400}`), uint8(0))
	f.Add([]byte(`{"leftLotteries":-5,"posNo":null}`), []byte(`{"leftLotteries":-9000000000000000000}`), uint8(200))
	f.Fuzz(func(t *testing.T, first, second []byte, own uint8) {
		now := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
		w := New(nil, Config{Now: func() time.Time { return now }}, nil, nil)
		_ = w.ObserveInfo(first)
		for range own {
			w.ReceiptIssued(true)
		}
		now = now.Add(time.Minute)
		_ = w.ObserveInfo(second)
		st := w.Status()
		if st.PacePerHour != nil && (*st.PacePerHour < 0 || math.IsNaN(*st.PacePerHour) || math.IsInf(*st.PacePerHour, 0)) {
			t.Fatalf("pace %v from %s then %s", *st.PacePerHour, first, second)
		}
		if st.OwnShare != nil && (*st.OwnShare < 0 || *st.OwnShare > 1) {
			t.Fatalf("share %v", *st.OwnShare)
		}
		if st.PosNo != nil && len(*st.PosNo) > maxMessage+len("…") {
			t.Fatalf("posNo of %d bytes kept", len(*st.PosNo))
		}
		if _, err := json.Marshal(st); err != nil {
			t.Fatal(err)
		}
	})
}
