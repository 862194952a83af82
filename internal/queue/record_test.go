package queue

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var recordCases = map[string]Entry{
	"new receipt": {QueueID: "Q000000000042", Kind: KindReceipt, State: StateQueued,
		AcceptedAt: time.Date(2026, 11, 26, 6, 0, 0, 123456789, time.UTC), UpdatedAt: time.Date(2026, 11, 26, 6, 0, 0, 123456789, time.UTC),
		Body: json.RawMessage(`{"totalAmount":1000.10}`), IdemKey: "client:abc", BodyHash: "3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046dea",
		MerchantTin: "37900846788", PosNo: "10001234", BillIDSuffix: "000017", Attempts: []Attempt{}},
	"sent, with history": {QueueID: "Q000000000007", Kind: KindReceipt, State: StateSent,
		AcceptedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 9, 0, 0, time.UTC),
		Body: json.RawMessage(`{}`), IdemKey: "k", BodyHash: "not hex", Ambiguous: 1, AttemptsDropped: 2,
		Attempts: []Attempt{{At: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC), Duration: time.Second, Result: ResultAmbiguous, Error: "lost"}},
		Outcome:  &Outcome{Status: "SUCCESS", ID: "123", Date: "2026-01-02 11:09:00", SubReceipts: []SubReceipt{{ID: "1"}}}},
	"delete waiting": {QueueID: "Q000000000009", Kind: KindDelete, State: StateDeleteQueued,
		AcceptedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		DeleteTarget: "Q000000000007", DeleteID: "123", DeleteDate: "2026-01-02 11:09:00",
		NextAttemptAt: time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC), Attempts: []Attempt{}},
	"zero times": {QueueID: "Q000000000001", Kind: KindReceipt, State: StateHeld, Attempts: []Attempt{}},
	// Hashes of 64 characters that are not 64 lowercase hex digits are
	// kept as text.
	"a hash in uppercase": {QueueID: "Q000000000003", Kind: KindReceipt, State: StateQueued, Attempts: []Attempt{},
		BodyHash: "3F79BB7B435B05321651DAEFD374CDC681DC06FAA65E374E38337B88CA046DEA"},
	"a hash with a letter past f": {QueueID: "Q000000000004", Kind: KindReceipt, State: StateQueued, Attempts: []Attempt{},
		BodyHash: "3f79bb7b435b05321651daefd374cdc681dc06faa65e374e38337b88ca046deg"},
	"a hash of the first and last digits": {QueueID: "Q000000000005", Kind: KindReceipt, State: StateQueued, Attempts: []Attempt{},
		BodyHash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
	"a year unix ns cannot hold": {QueueID: "Q000000000002", Kind: KindReceipt, State: StateQueued,
		AcceptedAt: time.Date(1500, 1, 2, 3, 4, 5, 6, time.UTC), UpdatedAt: time.Date(2400, 1, 2, 3, 4, 5, 6, time.UTC),
		Attempts: []Attempt{}},
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	for name, e := range recordCases {
		t.Run(name, func(t *testing.T) {
			rec, err := encode(&e)
			require.NoError(t, err)
			got, err := decode(rec)
			require.NoError(t, err)
			require.Equal(t, e, got)
		})
	}
}

// legacyRecord is an entry as schema 2 and before wrote it.
func legacyRecord(t testing.TB, e Entry) []byte {
	meta := e
	meta.Body = nil
	js, err := json.Marshal(&meta)
	require.NoError(t, err)
	return append(append(binary.AppendUvarint(nil, uint64(len(js))), js...), e.Body...)
}

// Files written before the compact records keep their JSON records until
// an entry is written again; both read the same.
func TestLegacyRecordsStillRead(t *testing.T) {
	t.Parallel()
	for name, e := range recordCases {
		t.Run(name, func(t *testing.T) {
			got, err := decode(legacyRecord(t, e))
			require.NoError(t, err)
			require.Equal(t, e, got)
		})
	}
}

// A typical new receipt's record is a third of the JSON one's overhead.
func TestCompactRecordSize(t *testing.T) {
	t.Parallel()
	e := recordCases["new receipt"]
	rec, err := encode(&e)
	require.NoError(t, err)
	overhead, legacy := len(rec)-len(e.Body), len(legacyRecord(t, e))-len(e.Body)
	t.Logf("overhead: %d bytes, JSON record %d", overhead, legacy)
	require.Less(t, overhead, legacy/2)
}

// FuzzDecode: records come from a file on disk, which may be damaged.
// decode never panics, and a record it accepts encodes back to a record
// that decodes to the same entry.
func FuzzDecode(f *testing.F) {
	for _, e := range recordCases {
		rec, _ := encode(&e)
		f.Add(rec)
		f.Add(rec[:len(rec)/2])
		f.Add(legacyRecord(f, e))
	}
	f.Add([]byte{0, 1})
	f.Fuzz(func(t *testing.T, v []byte) {
		e, err := decode(v)
		if err != nil {
			return
		}
		rec, err := encode(&e)
		if err != nil {
			return // a legacy record may hold what the compact one refuses (an unknown state)
		}
		again, err := decode(rec)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		a, _ := json.Marshal(e)
		b, _ := json.Marshal(again)
		if !bytes.Equal(a, b) {
			t.Fatalf("round trip changed the entry:\n%s\n%s", a, b)
		}
	})
}
