package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/receipt"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

// upgradeFixtures are the data directories written by each landed
// release (testdata/upgrade/make.sh says how), with the schema each wrote.
var upgradeFixtures = []struct {
	release string
	schema  uint64
}{
	{"a0959c8", 1},
	{"d6a4b47", 2},
	{"7558b84", 2},
	{"271721b", 3},
}

// keepFixtures is a [retention] section that keeps the fixtures' finished
// entries on any day the test runs. They were accepted on 2026-11-26 and
// 27; with the default keep (90 days) the daemon's first prune removes
// them at start from late February 2027 on, and the sent and rejected
// entries the test reads are gone (404).
const keepFixtures = "[retention]\nkeep = \"876000h\"\n"

// fixtureDir unpacks the data directory a release wrote into a new
// directory and returns it.
func fixtureDir(t *testing.T, release string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	f, err := os.Open(filepath.Join("testdata", "upgrade", release+".db.gz"))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	db, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(layout.DB(dir), db, 0o600))
	if marker, err := os.ReadFile(filepath.Join("testdata", "upgrade", release+".db.id")); err == nil {
		require.NoError(t, os.WriteFile(layout.Marker(dir), marker, 0o600))
	}
	return dir
}

// billOf is a posted receipt's billIdSuffix.
func billOf(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		Bill string `json:"billIdSuffix"`
	}
	require.NoError(t, json.Unmarshal(body, &r))
	return r.Bill
}

func fileSchema(t *testing.T, db string) (version uint64, release string) {
	t.Helper()
	d, err := bbolt.Open(db, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		v := b.Get([]byte("schema"))
		require.Len(t, v, 8)
		for _, c := range v {
			version = version<<8 | uint64(c)
		}
		release = string(b.Get([]byte("schema_release")))
		return nil
	}))
	return version, release
}

// TestUpgradeFromEveryRelease opens the data directory each landed
// release wrote (2 receipts sent, 1 rejected, 2 unsent, stopped by
// SIGTERM) with this receiptd and drains it through the simulator: the 2
// unsent are sent, once; what was finished stays as it was; a POS
// repeating a sent receipt gets a replay, not a second sale; queueIds go
// on from where the release left them; the file is migrated to this
// schema and names its release.
func TestUpgradeFromEveryRelease(t *testing.T) {
	for _, fx := range upgradeFixtures {
		t.Run(fx.release, func(t *testing.T) {
			dir := fixtureDir(t, fx.release)
			v, _ := fileSchema(t, layout.DB(dir))
			require.Equal(t, fx.schema, v, "the fixture holds the schema its release wrote")

			up := sim.New(sim.Options{Seed: 7})
			require.NoError(t, up.Start("127.0.0.1:0"))
			defer up.Close()
			d := startBinary(t, dir, up.URL(), keepFixtures)
			var e4, e5 testkit.Entry
			require.Eventually(t, func() bool {
				e4, e5 = testkit.GetEntry(t, d.base, "Q000000000004"), testkit.GetEntry(t, d.base, "Q000000000005")
				return e4.State == "sent" && e5.State == "sent"
			}, 20*time.Second, 50*time.Millisecond, "the unsent receipts are drained: %s, %s; log: %s", e4.State, e5.State, d.logs)
			require.Len(t, up.Receipts(), 2, "each unsent receipt is sent once, nothing finished is sent again")
			var bills []string
			for _, r := range up.Receipts() {
				bills = append(bills, billOf(t, r.Body))
			}
			require.ElementsMatch(t, []string{"000004", "000005"}, bills)
			require.Equal(t, "sent", testkit.GetEntry(t, d.base, "Q000000000001").State)
			require.Equal(t, "sent", testkit.GetEntry(t, d.base, "Q000000000002").State)
			require.Equal(t, "rejected", testkit.GetEntry(t, d.base, "Q000000000003").State)

			resp, err := http.Post(d.base+"/rest/receipt", "application/json", bytes.NewReader(sampleReceipt("000006")))
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			require.NoError(t, resp.Body.Close())
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "Q000000000006", resp.Header.Get("X-Queue-Id"), "queueIds go on")
			require.Len(t, up.Receipts(), 3)
			d.stop()

			v, release := fileSchema(t, layout.DB(dir))
			require.Equal(t, uint64(store.SchemaVersion), v)
			last := store.SchemaReleases[len(store.SchemaReleases)-1]
			require.Equal(t, last.Release+" of "+last.Date, release)

			requireReplayOnItsDay(t, dir, "000001", "Q000000000001")
		})
	}
}

// requireReplayOnItsDay holds that a POS repeating the sent receipt bill on
// the day the release accepted it gets that entry (queueID) back as a
// replay, not a second sale. The derived key holds the day
// (receipt.DefaultKey), and the binary's clock is the machine's: a repeat
// through it on any later day is a new sale, as it should be. So the
// repeat is made here, on the migrated file, at the fixture's own hour.
func requireReplayOnItsDay(t *testing.T, dir, bill, queueID string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.OpenDir(dir, store.Options{})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, queue.Options{LogDir: layout.WAL(dir)})
	require.NoError(t, err)
	defer func() {
		require.NoError(t, q.Close(ctx))
		require.NoError(t, st.Close())
	}()
	first, err := q.Get(queueID)
	require.NoError(t, err)
	loc, err := config.Default().Accept.Location()
	require.NoError(t, err)
	body := sampleReceipt(bill)
	c, err := receipt.ParseCreate(body)
	require.NoError(t, err)
	again := first.AcceptedAt.Add(time.Minute)
	require.Equal(t, first.AcceptedAt.In(loc).YearDay(), again.In(loc).YearDay(), "the fixture was not written within a minute of midnight")
	e, replayed, err := q.Enqueue(ctx, queue.NewReceipt{
		IdemKey: receipt.DefaultKey(c, again, loc), Body: body, BodyHash: receipt.Fingerprint(body),
		MerchantTin: c.MerchantTin, PosNo: c.PosNo, BillIDSuffix: c.BillIDSuffix, Now: again,
	})
	require.NoError(t, err)
	require.True(t, replayed, "a repeat of a sent receipt on its day is a replay")
	require.Equal(t, queueID, e.QueueID)
	require.Equal(t, queue.StateSent, e.State)
}

// TestRunRefusesANewerDatabaseNamingTheRelease: going back to an older
// receiptd over a database a newer one wrote is refused at start, exit 1,
// with the release to install, never "damaged", and the file unchanged.
func TestRunRefusesANewerDatabaseNamingTheRelease(t *testing.T) {
	dir := fixtureDir(t, "271721b")
	db := layout.DB(dir)
	d, err := bbolt.Open(db, 0o600, &bbolt.Options{Timeout: time.Second})
	require.NoError(t, err)
	require.NoError(t, d.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket(store.BucketMeta)
		if err := b.Put([]byte("schema_release"), []byte("2.0.0 of 2027-05-01")); err != nil {
			return err
		}
		return b.Put([]byte("schema"), []byte{0, 0, 0, 0, 0, 0, 0, store.SchemaVersion + 1})
	}))
	require.NoError(t, d.Close())
	before, err := os.ReadFile(db)
	require.NoError(t, err)

	code, stderr := runRefused(t, dataDirConfig(dir))
	require.Equal(t, exitFailure, code, stderr)
	require.Contains(t, stderr, db)
	require.Contains(t, stderr, "written by a newer receiptd")
	require.Contains(t, stderr, "install receiptd 2.0.0 of 2027-05-01 or later")
	require.NotContains(t, stderr, "damaged or")
	require.NotContains(t, stderr, "goroutine ", "no crash dump")
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.True(t, bytes.Equal(before, after), "nothing in the file is changed")
}
