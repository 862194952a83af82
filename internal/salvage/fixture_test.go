package salvage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/store"
)

var ctx = context.Background()

// body is a receipt body of about 500 bytes, as a POS sends it.
func body(n int) []byte {
	return fmt.Appendf(nil, `{"amount":"%d.00","vat":"%d.10","cityTax":"0.00","districtCode":"0101","merchantTin":"37900846788",`+
		`"posNo":"1","customerTin":"","billIdSuffix":"%06d","type":"B2C_RECEIPT","receipts":[{"totalAmount":"%d.00",`+
		`"taxType":"VAT_ABLE","merchantTin":"37900846788","items":[{"name":"Талх %d","barCode":"4800000000%04d",`+
		`"barCodeType":"GS1","classificationCode":"2111100","measureUnit":"ш","qty":"1","unitPrice":"%d.00",`+
		`"totalAmount":"%d.00","totalVAT":"%d.10","totalCityTax":"0.00"}]}],"payments":[{"code":"CASH","status":"PAID",`+
		`"paidAmount":"%d.00"}],"note":"%s"}`, n, n, n, n, n, n, n, n, n, n, strings.Repeat("x", n%40))
}

// fixture is a database written by the real queue: what it holds, and
// where its files are.
type fixture struct {
	path    string                 // the database file
	logDir  string                 // its write-ahead log
	entries map[string]queue.Entry // every entry in the file, by queueId
}

// plan says what build does to the receipts it enqueues.
type plan struct {
	receipts int
	// crashCopy, when set, is a directory that gets a copy of the
	// database and its log taken after the last `unapplied` receipts were
	// enqueued and before anything applied them: what a kill -9 leaves.
	crashCopy string
	unapplied int
}

// build writes a database with receipts in every state: of each ten
// claimed, five sent, one rejected, one held, one payment, one left in
// sending (a crash), one back to queued after a transient failure; the
// last tenth never claimed. Two sent receipts get a delete (delete_queued)
// and one never-claimed receipt is cancelled.
func build(t *testing.T, dir string, p plan) fixture {
	t.Helper()
	path := layout.DB(dir)
	logDir := layout.WAL(dir)
	st, err := store.Open(path, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: logDir})
	require.NoError(t, err)
	now := time.Now()
	for i := 1; i <= p.receipts; i++ {
		enqueueN(t, q, i)
	}
	claimed := p.receipts * 9 / 10
	var sent []string
	for done := 0; done < claimed; {
		es, err := q.Claim(ctx, min(50, claimed-done), now.Add(time.Hour))
		require.NoError(t, err)
		require.NotEmpty(t, es)
		for _, e := range es {
			if s := finish(t, q, e); s == queue.StateSent {
				sent = append(sent, e.QueueID)
			}
			done++
		}
	}
	for _, id := range sent[:2] {
		_, act, err := q.RequestDelete(ctx, id, "", now)
		require.NoError(t, err)
		require.Equal(t, queue.DeleteQueued, act)
	}
	_, act, err := q.RequestDelete(ctx, queue.FormatID(uint64(p.receipts)), "", now)
	require.NoError(t, err)
	require.Equal(t, queue.DeleteCancelled, act)
	for i := 1; i <= p.unapplied; i++ {
		enqueueN(t, q, p.receipts+i)
	}
	if p.crashCopy != "" {
		copyFile(t, path, layout.DB(p.crashCopy))
		require.NoError(t, os.MkdirAll(layout.WAL(p.crashCopy), 0o700))
		segs, err := filepath.Glob(filepath.Join(logDir, "*.wal"))
		require.NoError(t, err)
		for _, s := range segs {
			copyFile(t, s, filepath.Join(layout.WAL(p.crashCopy), filepath.Base(s)))
		}
	}
	require.NoError(t, q.Close(ctx))
	require.NoError(t, st.Close())
	return fixture{path: path, logDir: logDir, entries: readEntries(t, path)}
}

func enqueueN(t *testing.T, q *queue.Queue, n int) {
	t.Helper()
	b := body(n)
	_, replayed, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: fmt.Sprintf("pos1-%06d", n), Body: b,
		BodyHash: receipt.Fingerprint(b), MerchantTin: "37900846788", PosNo: "1", BillIDSuffix: fmt.Sprintf("%06d", n)})
	require.NoError(t, err)
	require.False(t, replayed)
}

// finish ends the attempt on e by its queueId's last digit, and returns
// the state it left e in.
func finish(t *testing.T, q *queue.Queue, e queue.Entry) queue.State {
	t.Helper()
	seq, _ := queue.ParseID(e.QueueID)
	f := queue.Finishing{QueueID: e.QueueID, Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess}}
	switch seq % 10 {
	case 0, 1, 2, 3, 4:
		f.Next = queue.StateSent
		f.Outcome = &queue.Outcome{Status: "SUCCESS", ID: fmt.Sprintf("%033d", seq), Date: "2026-11-26 10:00:00"}
	case 5:
		f.Next, f.Attempt.Result = queue.StateRejected, queue.ResultRejected
		f.Outcome = &queue.Outcome{Status: "ERROR", Message: "bad district code"}
	case 6:
		f.Next, f.Attempt.Result, f.Outcome = queue.StateHeld, queue.ResultAmbiguous, queue.HeldOutcome(1)
	case 7:
		f.Next, f.Attempt.Result = queue.StatePayment, queue.ResultPayment
		f.Outcome = &queue.Outcome{Status: "PAYMENT", ID: fmt.Sprintf("%033d", seq)}
	case 8:
		return queue.StateSending // receiptd stopped mid-attempt
	case 9:
		f.Next, f.Attempt.Result, f.NextAttemptAt = queue.StateQueued, queue.ResultTransient, time.Now().Add(time.Minute)
	}
	_, err := q.Finish(ctx, f)
	require.NoError(t, err)
	return f.Next
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(to)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// readEntries reads every entry of an intact file with bbolt itself.
func readEntries(t *testing.T, path string) map[string]queue.Entry {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer db.Close()
	out := map[string]queue.Entry{}
	require.NoError(t, db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte(keyQueue)).Bucket([]byte(keyEntries)).ForEach(func(k, v []byte) error {
			e, err := queue.DecodeRecord(v)
			if err != nil {
				return err
			}
			out[e.QueueID] = e
			return nil
		})
	}))
	return out
}

// compacted copies the file at path into a new file as `bbolt compact`
// does, in one transaction: every page of the copy is in its tree, so no
// freed page holds an older copy of an entry, and what a damaged page
// held is found nowhere else.
func compacted(t *testing.T, path string) string {
	t.Helper()
	src, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	require.NoError(t, err)
	defer src.Close()
	out := filepath.Join(t.TempDir(), "compacted.db")
	dst, err := bbolt.Open(out, 0o600, nil)
	require.NoError(t, err)
	require.NoError(t, bbolt.Compact(dst, src, 0))
	require.NoError(t, dst.Close())
	return out
}
