package update

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"aead.dev/minisign"
)

// MaxFile bounds the size of a release file: the receiptd executable is
// about 25 MB; a file larger than this is refused unread.
const MaxFile = 256 << 20

// Reason says which check refused a release.
type Reason string

// The reasons a release is refused, each a check of Check or CheckOffer.
const (
	ReasonHash       Reason = "hash"        // the file's SHA-256 is not the offer's
	ReasonSignature  Reason = "signature"   // no valid minisign signature of the file
	ReasonKey        Reason = "key"         // signed by a key the till does not trust
	ReasonComment    Reason = "comment"     // the trusted comment names another version or platform
	ReasonVersion    Reason = "version"     // not newer than the running version
	ReasonRolledBack Reason = "rolled back" // this file was rolled back on this till before
	ReasonSize       Reason = "size"        // larger than MaxFile
)

// RefusedError is a release refused by a check. Its message says why in
// words a head office's operator can act on.
type RefusedError struct {
	Reason Reason
	Msg    string
}

func (e *RefusedError) Error() string { return "refused (" + string(e.Reason) + "): " + e.Msg }

func refuse(r Reason, format string, args ...any) error {
	return &RefusedError{Reason: r, Msg: fmt.Sprintf(format, args...)}
}

// ReasonOf returns the Reason of a refusal, or "" when err is no refusal.
func ReasonOf(err error) Reason {
	var re *RefusedError
	if errors.As(err, &re) {
		return re.Reason
	}
	return ""
}

// Offer is a release as the head office offers it: the version, the
// SHA-256 of its file (OpAMP's content_hash) and the bytes of its
// minisign signature file (OpAMP's signature: FILE.minisig).
type Offer struct {
	Version   string
	SHA256    []byte
	Signature []byte
}

// Policy is what this till accepts. The zero value accepts nothing: no
// key is trusted.
type Policy struct {
	// Keys are update.trusted_keys, from the till's own file.
	Keys []Key
	// Platform is this till's GOOS/GOARCH, as runtime gives them.
	Platform string
	// Running is the version running now.
	Running string
	// AllowDowngrade is update.allow_downgrade: an older version may run.
	AllowDowngrade bool
	// RolledBack reports whether a file of this SHA-256 was rolled back
	// on this till before; nil: none was.
	RolledBack func(sha256 []byte) bool
	// MaxSize bounds the file's size in bytes; zero: MaxFile.
	MaxSize int64
}

// Comment is the trusted comment a release of version for platform must
// carry, as `minisign -S -t` writes it.
func Comment(version, platform string) string {
	return "receiptd " + version + " " + platform
}

// CheckOffer refuses an offer on what is known before its file is
// downloaded: its version against the running one, a hash rolled back
// before, and its signature's key and trusted comment (the comment's own
// signature covers it without the file). A nil error is no verdict on
// the file itself: Check gives that.
func (p Policy) CheckOffer(o Offer) (minisign.Signature, Key, error) {
	if len(o.SHA256) != sha256.Size {
		return minisign.Signature{}, Key{}, refuse(ReasonHash, "the offer's content_hash is %d bytes, not a SHA-256", len(o.SHA256))
	}
	if p.RolledBack != nil && p.RolledBack(o.SHA256) {
		return minisign.Signature{}, Key{}, refuse(ReasonRolledBack, "the file %s was rolled back on this till before and is never tried again", short(o.SHA256))
	}
	if err := p.checkVersion(o.Version); err != nil {
		return minisign.Signature{}, Key{}, err
	}
	var sig minisign.Signature
	if err := sig.UnmarshalText(o.Signature); err != nil {
		return sig, Key{}, refuse(ReasonSignature, "the signature is not a minisign signature: %v", err)
	}
	if sig.Algorithm != minisign.HashEdDSA {
		return sig, Key{}, refuse(ReasonSignature, "a legacy minisign signature (not prehashed): sign with minisign 0.8 or later, without -l")
	}
	k, ok := p.key(sig.KeyID)
	if !ok {
		return sig, Key{}, refuse(ReasonKey, "signed by key %s, which this till does not trust (update.trusted_keys)", keyID(sig.KeyID))
	}
	if !k.commentSigned(sig) {
		return sig, k, refuse(ReasonSignature, "the trusted comment's signature does not verify with key %s", k.ID())
	}
	if want := Comment(o.Version, p.Platform); sig.TrustedComment != want {
		return sig, k, refuse(ReasonComment, "the signed comment is %q, not %q: the file is for another version or platform", sig.TrustedComment, want)
	}
	return sig, k, nil
}

// Check refuses an offer unless the file read from r is the one offered
// and signed: CheckOffer's checks, then its SHA-256 and its minisign
// signature over the whole file. It reads r to its end (at most
// Policy.MaxSize bytes) and runs nothing of it.
func (p Policy) Check(o Offer, r io.Reader) error {
	_, k, err := p.CheckOffer(o)
	if err != nil {
		return err
	}
	limit := p.MaxSize
	if limit <= 0 {
		limit = MaxFile
	}
	sum := sha256.New()
	mr := minisign.NewReader(io.TeeReader(io.LimitReader(r, limit+1), sum))
	n, err := io.Copy(io.Discard, mr)
	if err != nil {
		return fmt.Errorf("read the release file: %w", err)
	}
	if n > limit {
		return refuse(ReasonSize, "the file is larger than %d bytes", limit)
	}
	if got := sum.Sum(nil); !bytes.Equal(got, o.SHA256) {
		return refuse(ReasonHash, "the file's SHA-256 is %s, the offer names %s", hex.EncodeToString(got), hex.EncodeToString(o.SHA256))
	}
	if !mr.Verify(k.pub, o.Signature) {
		return refuse(ReasonSignature, "the signature does not match the file (key %s)", k.ID())
	}
	return nil
}

func (p Policy) checkVersion(v string) error {
	c, err := Compare(v, p.Running)
	if err != nil {
		return refuse(ReasonVersion, "%v", err)
	}
	switch {
	case c == 0:
		return refuse(ReasonVersion, "%s is the version running", v)
	case c < 0 && !p.AllowDowngrade:
		return refuse(ReasonVersion, "%s is older than the running %s (update.allow_downgrade is off)", v, p.Running)
	}
	return nil
}

func (p Policy) key(id uint64) (Key, bool) {
	for _, k := range p.Keys {
		if k.pub.ID() == id {
			return k, true
		}
	}
	return Key{}, false
}

// commentSigned reports whether sig's trusted comment is signed by k:
// minisign signs the file's signature followed by the comment, so this
// holds without the file.
func (k Key) commentSigned(sig minisign.Signature) bool {
	raw, err := base64.StdEncoding.DecodeString(k.pub.String())
	// Algorithm (2 bytes), key ID (8), the Ed25519 key.
	if err != nil || len(raw) != 2+8+ed25519.PublicKeySize {
		return false
	}
	msg := append(sig.Signature[:len(sig.Signature):len(sig.Signature)], sig.TrustedComment...)
	return ed25519.Verify(ed25519.PublicKey(raw[10:]), msg, sig.CommentSignature[:])
}

// short is a hash as the messages name it: its first 12 hex digits.
func short(sum []byte) string { return hex.EncodeToString(sum)[:12] }
