// Package updatetest makes minisign keys and signs release files as
// `minisign -G` and `minisign -S -t` do, for tests of what takes a
// release (package release, `receiptd update apply`).
package updatetest

import (
	"bytes"
	"crypto/rand"
	"io"
	"os"
	"testing"

	"aead.dev/minisign"
)

// Signer is a minisign key pair made for one test.
type Signer struct {
	pub  minisign.PublicKey
	priv minisign.PrivateKey
}

// NewSigner makes a key pair.
func NewSigner(t testing.TB) Signer {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return Signer{pub: pub, priv: priv}
}

// PublicKey is the key as update.trusted_keys holds it (the RW... line).
func (s Signer) PublicKey() string {
	text, err := s.pub.MarshalText()
	if err != nil {
		panic(err)
	}
	lines := bytes.Split(bytes.TrimSpace(text), []byte("\n"))
	return string(lines[len(lines)-1])
}

// Sign signs file prehashed with the trusted comment, as `minisign -S -t
// comment` does, and returns the .minisig file's content.
func (s Signer) Sign(file []byte, comment string) []byte {
	r := minisign.NewReader(bytes.NewReader(file))
	if _, err := io.Copy(io.Discard, r); err != nil {
		panic(err)
	}
	return r.SignWithComments(s.priv, comment, "signature from a test key")
}

// SignFile writes path + ".minisig" for the file at path.
func (s Signer) SignFile(t testing.TB, path, comment string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".minisig", s.Sign(data, comment), 0o644); err != nil {
		t.Fatal(err)
	}
}
