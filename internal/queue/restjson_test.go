package queue

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzAppendRest holds appendRest to json.Marshal's bytes and errors,
// whatever the strings (escapes, invalid UTF-8), numbers and times (any
// zone, years outside 0 to 9999) of an entry's history and outcome.
func FuzzAppendRest(f *testing.F) {
	f.Add(int64(1796112000123456789), 0, "", "SUCCESS", "030000000000000000000000012345678", "2026-11-29 12:00:00", "", 200, 0, 1, 0)
	f.Add(int64(-62135596800000000), 3600, "connect: refused <&>\u2028", "", "", "", "x\xffy", 0, 3, 4, 2)
	f.Add(int64(253402300800000000), -1, "\"\\\n\t\x00", "ERROR", "", "", "bad", 400, 1, 0, 1)
	f.Fuzz(func(t *testing.T, ns int64, offset int, s1, s2, s3, s4, s5 string, status, n, nAttempts, nSubs int) {
		at := time.Unix(0, ns).In(time.FixedZone("z", offset%(30*3600)))
		nAttempts, nSubs = abs(nAttempts)%4, abs(nSubs)%3
		r := entryRest{AttemptsDropped: n, Ambiguous: -n, DeleteTarget: s4, DeleteID: s5, DeleteDate: s1}
		for i := range nAttempts {
			r.Attempts = append(r.Attempts, Attempt{At: at.Add(time.Duration(i) * time.Hour), Duration: time.Duration(ns / 7),
				Result: Result(s2), Error: s1, HTTPStatus: status * i, UpstreamID: s3[:len(s3)*i%(len(s3)+1)]})
		}
		if n%2 == 0 {
			r.NextAttemptAt = at
		}
		if nSubs > 0 || s2 != "" {
			r.Outcome = &Outcome{Status: s2, ID: s3, Date: s4, PosID: s5, Message: s1, HTTPStatus: status}
			for i := range nSubs - 1 {
				r.Outcome.SubReceipts = append(r.Outcome.SubReceipts, SubReceipt{ID: s3, BankAccountID: s5[:i*len(s5)]})
			}
		}
		want, werr := json.Marshal(&r)
		got, gerr := appendRest([]byte("prefix"), &r)
		switch {
		case (werr == nil) != (gerr == nil):
			t.Fatalf("json.Marshal's error %v, appendRest's %v", werr, gerr)
		case werr != nil:
			if werr.Error() != gerr.Error() {
				t.Fatalf("json.Marshal's error %q, appendRest's %q", werr, gerr)
			}
		case !bytes.Equal(got, append([]byte("prefix"), want...)):
			t.Fatalf("appendRest:\n%s\njson.Marshal:\n%s", got[len("prefix"):], want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// go test -run '^$' -bench AppendRest -benchmem ./internal/queue: an online
// sale's outcome record's JSON, by appendRest and by json.Marshal.
func BenchmarkAppendRest(b *testing.B) {
	at := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	r := entryRest{Attempts: []Attempt{{At: at, Duration: 812 * time.Microsecond, Result: ResultSuccess, HTTPStatus: 200}},
		Outcome: &Outcome{Status: "SUCCESS", ID: "030000000000000000000000012345678", Date: "2026-11-29 12:00:00", HTTPStatus: 200}}
	b.Run("appendRest", func(b *testing.B) {
		for b.Loop() {
			if _, err := appendRest(make([]byte, 0, 256), &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(&r); err != nil {
				b.Fatal(err)
			}
		}
	})
}
