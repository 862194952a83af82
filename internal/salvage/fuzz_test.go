package salvage

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
)

// seedPages adds the pages of a small real database to f.
func seedPages(f *testing.F) []byte {
	t := &testing.T{}
	fx := build(t, f.TempDir(), plan{receipts: 30})
	raw, err := os.ReadFile(fx.path)
	if err != nil {
		f.Fatal(err)
	}
	for off := 0; off+4096 <= len(raw); off += 4096 {
		f.Add(raw[off : off+4096])
	}
	return raw
}

// FuzzDecodePage: any bytes taken for a page never panic the decoder, and
// every entry it returns decodes as a record under its own key.
func FuzzDecodePage(f *testing.F) {
	seedPages(f)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, page []byte) {
		_, _, _, _ = decodeElems(page, true)
		_, els, _, _ := decodeElems(page, false)
		_, _ = decodeBucket(page)
		_, _ = freelistIDs(page)
		_, _ = decodeMeta(page)
		for _, el := range els {
			c, ok := entryOf(el)
			if !ok {
				continue
			}
			e, err := queue.DecodeRecord(el.value)
			require.NoError(t, err)
			require.Equal(t, queue.FormatID(binary.BigEndian.Uint64(el.key)), e.QueueID)
			require.Equal(t, e, c.e)
		}
	})
}

// FuzzRead: any file never panics Read, and every entry it returns is
// valid under its own queueId.
func FuzzRead(f *testing.F) {
	raw := seedPages(f)
	f.Add(raw)
	f.Fuzz(func(t *testing.T, file []byte) {
		db, err := Read(bytes.NewReader(file), int64(len(file)))
		require.NoError(t, err)
		for _, e := range db.Entries() {
			seq, ok := queue.ParseID(e.QueueID)
			require.True(t, ok)
			require.True(t, valid(seq, &e))
		}
	})
}
