package receipt

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// stopsStr is what str must stop at, byte by byte.
func stopsStr(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }

// TestSpecialFindsTheFirstByteStrStopsAt: for every byte value at every
// place in a word, among bytes around the ones it tests (0x1f/0x20,
// 0x21/0x23, 0x5b/0x5d, 0x7f, 0x80, 0xff), and for a million random
// words, special is zero exactly when no byte needs a look, and its lowest
// bit is that of the first one.
func TestSpecialFindsTheFirstByteStrStopsAt(t *testing.T) {
	t.Parallel()
	check := func(word [8]byte) {
		t.Helper()
		want := -1
		for i, c := range word {
			if stopsStr(c) {
				want = i
				break
			}
		}
		m := special(binary.LittleEndian.Uint64(word[:]))
		got := -1
		if m != 0 {
			got = bits.TrailingZeros64(m) / 8
		}
		if got != want {
			t.Fatalf("special(%q): first byte to stop at %d, want %d", word[:], got, want)
		}
	}
	fillers := []byte{'a', 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0x00, '"', '\\'}
	for _, fill := range fillers {
		for at := range 8 {
			for c := range 256 {
				var word [8]byte
				for i := range word {
					word[i] = fill
				}
				word[at] = byte(c)
				check(word)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		var word [8]byte
		binary.LittleEndian.PutUint64(word[:], r.Uint64())
		check(word)
	}
}

// TestStrReadsEveryLength: a string with a byte str stops at in each
// place, of each length around the eight-byte steps, is read (or
// refused) as the byte-by-byte reading would.
func TestStrReadsEveryLength(t *testing.T) {
	t.Parallel()
	for n := range 20 {
		plain := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		body := `{"k":"` + plain + `"}`
		root, err := new(walker).parse([]byte(body))
		if err != nil || root.get("k").text != plain {
			t.Fatalf("%s: %v", body, err)
		}
		for at := 0; at <= len(plain); at++ {
			if at < len(plain) && !utf8.RuneStart(plain[at]) {
				continue
			}
			escaped := `{"k":"` + plain[:at] + `\"` + plain[at:] + `"}`
			root, err := new(walker).parse([]byte(escaped))
			if err != nil || root.get("k").text != plain[:at]+`"`+plain[at:] {
				t.Fatalf("%s: %v", escaped, err)
			}
			control := `{"k":"` + plain[:at] + "\x01" + plain[at:] + `"}`
			if _, err := new(walker).parse([]byte(control)); err == nil ||
				!strings.Contains(err.Error(), "at byte "+strconv.Itoa(len(`{"k":"`)+at)) {
				t.Fatalf("%q: %v, want the control character's place", control, err)
			}
		}
		if _, err := new(walker).parse([]byte(`{"k":"` + plain)); err == nil {
			t.Fatalf("unterminated %q accepted", plain)
		}
	}
}

// TestDuplicateKeysAreFoundWhateverTheKeys: objects of 1 to 40 keys
// (across the change from a search to a map at 32) drawn from few
// letters, so that keys share lengths and first and last bytes, are
// refused exactly when a key repeats.
func TestDuplicateKeysAreFoundWhateverTheKeys(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	for range 20_000 {
		n := 1 + r.IntN(40)
		seen := map[string]bool{}
		dup := false
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			k := make([]byte, r.IntN(4))
			for j := range k {
				k[j] = "abc"[r.IntN(3)]
			}
			dup = dup || seen[string(k)]
			seen[string(k)] = true
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"` + string(k) + `":0`)
		}
		b.WriteString("}")
		_, err := new(walker).parse([]byte(b.String()))
		if refused := err != nil && strings.Contains(err.Error(), "duplicate key"); refused != dup {
			t.Fatalf("%s: duplicate %v, refused: %v", b.String(), dup, err)
		}
	}
}
