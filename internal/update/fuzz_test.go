package update

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCheck feeds Check offers whose version, signature and file come
// from outside (the head office, a USB stick): it must never panic, and
// never pass a file that is not the fixture Debian's minisign signed.
func FuzzCheck(f *testing.F) {
	pub, err := os.ReadFile(filepath.Join("testdata", "debian.pub"))
	if err != nil {
		f.Fatal(err)
	}
	k, err := ParseKey(string(pub))
	if err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(filepath.Join("testdata", "release.bin"))
	if err != nil {
		f.Fatal(err)
	}
	sig, err := os.ReadFile(filepath.Join("testdata", "release.bin.minisig"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("1.4.0", sig, good)
	f.Add("1.4.0", bytes.Replace(sig, []byte("1.4.0"), []byte("1.4.1"), 1), good)
	f.Add("v1.4.0+x", []byte("untrusted comment: x\nRUQ\ntrusted comment: receiptd 1.4.0 linux/amd64\n"), []byte{})
	f.Add("9999999999999999999.0.0", sig[:40], good[:5])
	p := Policy{Keys: []Key{k}, Platform: "linux/amd64", Running: "1.0.0"}
	f.Fuzz(func(t *testing.T, version string, signature, file []byte) {
		o := Offer{Version: version, SHA256: sum(file), Signature: signature}
		err := p.Check(o, bytes.NewReader(file))
		if err == nil && (!bytes.Equal(file, good) || version != "1.4.0") {
			t.Fatalf("passed a file or version that was not signed: %q, %d bytes", version, len(file))
		}
	})
}
