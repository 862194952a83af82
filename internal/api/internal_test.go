package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/store"
)

func TestParsePrefer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		fields []string
		want   preference
	}{
		{"none", nil, preference{}},
		{"wait", []string{"wait=10"}, preference{hasWait: true, wait: 10 * time.Second}},
		{"case and spaces", []string{" WAIT = 3 "}, preference{hasWait: true, wait: 3 * time.Second}},
		{"quoted", []string{`wait="7"`}, preference{hasWait: true, wait: 7 * time.Second}},
		{"zero", []string{"wait=0"}, preference{hasWait: true}},
		{"with parameters", []string{"wait=4; foo=bar"}, preference{hasWait: true, wait: 4 * time.Second}},
		{"list", []string{"handling=lenient, respond-async, wait=9"}, preference{async: true, hasWait: true, wait: 9 * time.Second}},
		{"two fields, first wins", []string{"wait=2", "wait=5"}, preference{hasWait: true, wait: 2 * time.Second}},
		{"negative ignored", []string{"wait=-1"}, preference{}},
		{"decimal ignored", []string{"wait=1.5"}, preference{}},
		{"empty ignored", []string{"wait="}, preference{}},
		{"unknown ignored", []string{"return=minimal"}, preference{}},
		{"huge saturates", []string{"wait=99999999999999999999999"}, preference{hasWait: true, wait: 1<<63 - 1}},
		{"first wait wins though invalid", []string{"wait=x, wait=3"}, preference{}},
		{"async twice", []string{"Respond-Async", "respond-async; x=1"}, preference{async: true}},
		{"empty items", []string{",, wait=1 ,"}, preference{hasWait: true, wait: time.Second}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, parsePrefer(c.fields))
		})
	}
}

func TestFailureStatus(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("enqueue: %w", err) }
	for _, c := range []struct {
		err  error
		code int
		msg  string
	}{
		{wrap(store.ErrDiskFull), http.StatusInsufficientStorage, "disk full"},
		{wrap(queue.ErrConflict), http.StatusConflict, "different body"},
		{wrap(queue.ErrNotFound), http.StatusNotFound, "no such entry"},
		{wrap(queue.ErrIllegalTransition), http.StatusConflict, "illegal"},
		{wrap(queue.ErrInvalid), http.StatusBadRequest, "invalid"},
		{wrap(context.Canceled), http.StatusServiceUnavailable, "send it again"},
		{wrap(store.ErrClosed), http.StatusServiceUnavailable, "send it again"},
		{wrap(store.ErrFailed), http.StatusInternalServerError, "see the receiptd log"},
		{wrap(store.ErrMoved), http.StatusServiceUnavailable, "moved, deleted or replaced"},
		{&http.MaxBytesError{Limit: 10}, http.StatusRequestEntityTooLarge, "limit of 99"},
		{&receipt.ValidationError{Errors: []receipt.FieldError{{Field: "posNo", Problem: "required"}}}, http.StatusBadRequest, "posNo: required"},
		{errors.New("boom"), http.StatusInternalServerError, "nothing was stored"},
	} {
		code, msg := failureStatus(c.err, 99)
		require.Equal(t, c.code, code, "%v", c.err)
		require.Contains(t, msg, c.msg)
	}
}

// TestDiskFullAnswers507 drives the create handler's error path with a
// closed-over failure: a disk-full Enqueue must be 507 with a clear message,
// and is logged as the server's failure; a client's mistake is not logged.
func TestDiskFullAnswers507(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zap.InfoLevel)
	s := New(Deps{Log: zap.New(core)}, Options{})
	rec := httptest.NewRecorder()
	s.fail(rec, "create", fmt.Errorf("enqueue: %w", fmt.Errorf("commit /data/receiptd.db: %w", store.ErrDiskFull)))
	require.Equal(t, http.StatusInsufficientStorage, rec.Code)
	require.Contains(t, rec.Body.String(), `"status":"ERROR"`)
	require.Contains(t, rec.Body.String(), "disk full")
	require.Equal(t, 1, logs.Len(), "the server's failure is logged")
	l := logs.All()[0]
	require.Equal(t, zap.ErrorLevel, l.Level)
	require.Equal(t, "create failed", l.Message)
	require.Contains(t, l.ContextMap()["error"], "receiptd.db")

	rec = httptest.NewRecorder()
	s.fail(rec, "create", fmt.Errorf("enqueue: %w", queue.ErrConflict))
	require.Equal(t, http.StatusConflict, rec.Code)
	require.Equal(t, 1, logs.Len(), "a client's mistake is answered, not logged")
}

// TestReadAllWithSize: the body is read whole whatever the size says
// (exact, short, long, unknown), in one allocation when it is exact.
func TestReadAllWithSize(t *testing.T) {
	body := strings.Repeat("receipt ", 100)
	for _, size := range []int64{0, -1, 1, 100, int64(len(body)), int64(len(body)) + 7, 10000} {
		got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), size)
		require.NoError(t, err, "size %d", size)
		require.Equal(t, body, string(got), "size %d", size)
	}
	allocs := testing.AllocsPerRun(20, func() {
		_, _ = readAll(strings.NewReader(body), int64(len(body)))
	})
	require.LessOrEqual(t, allocs, 2.0, "an exact size reads into one buffer")
	failing := iotest.TimeoutReader(strings.NewReader(body)) // fails on its second read
	_, err := readAll(failing, int64(len(body))+1)
	require.ErrorIs(t, err, iotest.ErrTimeout)
}

// TestReadAllTakesNotTheClientsWordForMemory: a request that says it
// brings max_body (1 MiB) bytes and sends a few, or nothing yet, must not
// cost a megabyte before its bytes arrive: every connection of the
// max_connections cap could hold one while it trickles.
func TestReadAllTakesNotTheClientsWordForMemory(t *testing.T) {
	body := strings.Repeat("r", 100)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		got, err := readAll(strings.NewReader(body), DefaultMaxBody)
		require.NoError(t, err)
		require.Equal(t, body, string(got))
	}
	runtime.ReadMemStats(&after)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2<<20),
		"bytes allocated for ten 100-byte bodies that each claimed 1 MiB")
}

// writeAccepted's fast path writes exactly what encoding/json writes, and
// anything it would escape goes through encoding/json.
func TestWriteAcceptedMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		a    accepted
	}{
		{"plain", accepted{QueueID: "Q000000000042", State: queue.StateQueued, Message: "accepted and stored; no answer yet (see GET /x)"}},
		{"empty", accepted{}},
		{"quote", accepted{QueueID: "Q1", State: queue.StateHeld, Message: `say "held"`}},
		{"backslash", accepted{Message: `a\b`}},
		{"html", accepted{Message: "<a> & <b>"}},
		{"control", accepted{Message: "line\nbreak\ttab"}},
		{"utf-8", accepted{Message: "Улаанбаатар \u2028"}},
		{"invalid utf-8", accepted{Message: "bad \xff byte"}},
		{"del", accepted{Message: "del \x7f"}},
		{"outcome", accepted{QueueID: "Q2", State: queue.StateSent, Message: "ok", Outcome: &queue.Outcome{Message: "done"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			half := c.a
			half.Message = c.a.Message[:len(c.a.Message)/2]
			writeAccepted(rec, half, c.a.Message[len(c.a.Message)/2:])
			want := httptest.NewRecorder()
			writeJSON(want, http.StatusAccepted, c.a)
			require.Equal(t, http.StatusAccepted, rec.Code)
			require.Equal(t, want.Body.String(), rec.Body.String())
			require.Equal(t, want.Header(), rec.Header())
		})
	}
}

// parsePreferSplit is parsePrefer as it was written first (a split and a
// map per request): the reference FuzzParsePrefer holds the faster one to.
func parsePreferSplit(fields []string) preference {
	var p preference
	seen := map[string]bool{}
	for _, field := range fields {
		for _, pref := range strings.Split(field, ",") {
			pref, _, _ = strings.Cut(pref, ";")
			name, value, _ := strings.Cut(pref, "=")
			name = strings.ToLower(strings.TrimSpace(name))
			value = strings.Trim(strings.TrimSpace(value), `"`)
			if name == "" || seen[name] {
				continue
			}
			seen[name] = true
			switch name {
			case "respond-async":
				p.async = true
			case "wait":
				if d, ok := waitSeconds(value); ok {
					p.hasWait, p.wait = true, d
				}
			}
		}
	}
	return p
}

func FuzzParsePrefer(f *testing.F) {
	for _, s := range []string{"wait=10", " WAIT = 3 ", `wait="7"`, "wait=4; foo=bar", "handling=lenient, respond-async, wait=9",
		"wait=x, wait=3", ",, wait=1 ,", "wait=99999999999999999999999", "respond-async;wait=1"} {
		f.Add(s, "wait=5")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, s := range []string{a, b} {
			for _, r := range s {
				if r >= 0x80 {
					t.Skip("header tokens are ASCII; case folding differs beyond it")
				}
			}
		}
		fields := []string{a, b}
		require.Equal(t, parsePreferSplit(fields), parsePrefer(fields))
	})
}
