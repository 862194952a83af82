package apiclient

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The client's failures say what to check: a daemon that does not answer
// is ErrNotRunning naming the address; a non-2xx answer is an AnswerError
// carrying the daemon's own message (or the start of its body).
func TestClientSaysWhatFailed(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/json":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"message":"the entry is sent"}`))
		case r.URL.Path == "/text":
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("  " + strings.Repeat("x", 300)))
		default:
			_, _ = w.Write([]byte(`{"alert":"none","version":"v1","upstream":{"state":"up"},"counts":{"queued":2,"held":1,"sent":5}}`))
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	c := &Client{Base: "http://" + ln.Addr().String(), Token: "tok", HTTP: &http.Client{}}
	ctx := context.Background()

	for _, tc := range []struct {
		path    string
		code    int
		message string
	}{
		{"/json", http.StatusConflict, "the entry is sent"},
		{"/text", http.StatusBadGateway, strings.Repeat("x", 200) + "..."},
	} {
		var v any
		err := c.GetJSON(ctx, http.MethodPost, tc.path, &v)
		var ae *AnswerError
		require.ErrorAs(t, err, &ae, tc.path)
		require.Equal(t, tc.code, ae.Code)
		require.Equal(t, tc.message, ae.Message)
	}

	var out strings.Builder
	require.NoError(t, PrintDaemonStatus(ctx, &out, c))
	require.Contains(t, out.String(), "daemon: running at "+c.Base+" (version v1); alert: none")
	require.Contains(t, out.String(), "queue: 2 waiting, 1 need a person, 5 sent")

	require.NoError(t, srv.Close())
	err = c.GetJSON(ctx, http.MethodGet, "/", new(any))
	require.True(t, errors.Is(err, ErrNotRunning), "%v", err)
	require.ErrorContains(t, err, c.Base)
}

// errorMessage reads whatever a daemon (or something else on its port)
// answers: it never panics, and what it returns is valid UTF-8 (a body cut
// at 200 bytes is cut between characters) and at most three times what it
// read (4 KiB; a byte that is not UTF-8 becomes U+FFFD).
func FuzzErrorMessage(f *testing.F) {
	for _, s := range []string{`{"message":"the entry is sent"}`, `{"message":""}`, "<html>502</html>", "\xff\xfe", `{"message":"\ud800"}`, "a" + strings.Repeat("é", 150), ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got := errorMessage(strings.NewReader(string(body)))
		if !utf8.ValidString(got) {
			t.Fatalf("not valid UTF-8: %q", got)
		}
		if len(got) > 4096*3 {
			t.Fatalf("%d bytes from a body of %d", len(got), len(body))
		}
	})
}

// TestPrintDaemonStatusUpdateLine: `receiptd status` prints a line for
// the update unless it is idle (or a daemon too old to say), with its
// state, since when and its message.
func TestPrintDaemonStatusUpdateLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, update, want string
	}{
		{"idle", `{"state":"idle","since":null,"running":null,"previous":null,"offered":null}`, ""},
		{"an older daemon", ``, ""},
		{"rolled back", `{"state":"rolled_back","message":"rolled back: exit status 3","since":"2026-11-28T09:15:00Z"}`,
			"  update: rolled_back since " + time.Date(2026, 11, 28, 9, 15, 0, 0, time.UTC).Local().Format(time.DateTime) +
				" (rolled back: exit status 3); receiptd update status says more\n"},
		{"staged, no since", `{"state":"staged","message":"1.2.0 verified"}`, "  update: staged (1.2.0 verified); receiptd update status says more\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := `{"alert":"none","version":"v1","upstream":{"state":"up"},"counts":{}`
			if tc.update != "" {
				body += `,"update":` + tc.update
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(body + "}"))
			})}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
			var out strings.Builder
			require.NoError(t, PrintDaemonStatus(context.Background(), &out, &Client{Base: "http://" + ln.Addr().String(), HTTP: &http.Client{}}))
			_, line, _ := strings.Cut(out.String(), "  update:")
			if tc.want == "" {
				require.Empty(t, line, out.String())
				return
			}
			require.Equal(t, tc.want, "  update:"+line)
		})
	}
}
