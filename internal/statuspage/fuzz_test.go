package statuspage

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// FuzzRender feeds outside text (upstream messages, errors, states, cache
// kinds, the update's state) to the page: it must always render, never let markup through, and
// keep one row per state and per failure.
func FuzzRender(f *testing.F) {
	f.Add("merchantTin: not registered", "rejected", "branchInfo", int64(90), 3)
	f.Add(`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, "</table>", int64(-5), -1)
	f.Add("\xff\xfe invalid utf-8 \x00", "{{.Version}}", "<!--", int64(1<<62), 0)
	f.Fuzz(func(t *testing.T, msg, state, kind string, ageSec int64, n int) {
		d := downData()
		d.LastError, d.Version = msg, msg
		d.Counts = map[string]int{state: n, "queued": n}
		d.OldestUnsentAge = time.Duration(ageSec) * time.Second
		d.Failures = []Failure{{QueueID: msg, Kind: kind, State: state, Message: msg, At: now.Add(-time.Duration(ageSec))}}
		d.Cache = []CacheKind{{Kind: kind, LastError: msg, LastRefresh: now.Add(time.Duration(ageSec))}}
		// update.json's message carries a refusal's or a rollback's text,
		// and its versions come from a release's signature.
		d.Update = &Update{State: state, Message: msg, Offered: kind, Running: msg, Answering: kind, Since: now.Add(-time.Duration(ageSec))}
		var b bytes.Buffer
		if err := Render(&b, d); err != nil {
			t.Fatal(err)
		}
		html := strings.ToLower(b.String())
		for _, bad := range []string{"<script", "<img", "<!--", "</table><"} {
			if strings.Contains(html, bad) {
				t.Fatalf("%q in the page", bad)
			}
		}
		rows := len(stateInfo) + 1 + 1 + 1 + 3 // states (+ an unknown one), a failure, a cache kind, 3 header rows
		if knownState(state) {
			rows--
		}
		if n > 0 && (state == "held" || state == "rejected" || state == "payment" || state == "delete_rejected") {
			rows += 2 // the attention item's own table: a header and the failure
		}
		if got := strings.Count(html, "<tr"); got != rows {
			t.Fatalf("%d rows, want %d", got, rows)
		}
	})
}

func knownState(s string) bool {
	for _, i := range stateInfo {
		if i.state == s {
			return true
		}
	}
	return false
}
