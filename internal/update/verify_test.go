package update

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"aead.dev/minisign"
	"github.com/stretchr/testify/require"
)

// signer is a minisign key pair made for a test.
type signer struct {
	pub  Key
	priv minisign.PrivateKey
}

func newSigner(t *testing.T) signer {
	t.Helper()
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	require.NoError(t, err)
	text, err := pub.MarshalText()
	require.NoError(t, err)
	k, err := ParseKey(string(text))
	require.NoError(t, err)
	return signer{pub: k, priv: priv}
}

// sign signs file prehashed with comment, as `minisign -S -t` does.
func (s signer) sign(file []byte, comment string) []byte {
	r := minisign.NewReader(bytes.NewReader(file))
	_, _ = r.Read(make([]byte, 0))
	buf := make([]byte, len(file))
	n, _ := r.Read(buf)
	for n < len(file) {
		m, _ := r.Read(buf[n:])
		n += m
	}
	return r.SignWithComments(s.priv, comment, "signature from a test key")
}

func sum(b []byte) []byte { s := sha256.Sum256(b); return s[:] }

// TestCheckRefusesEachBadRelease holds every refusal of issue 39's list
// to its own check: each case passes every check but one.
func TestCheckRefusesEachBadRelease(t *testing.T) {
	good := []byte("a receiptd executable, or as good as one for this test")
	trusted, foreign := newSigner(t), newSigner(t)
	const platform = "linux/amd64"
	policy := Policy{Keys: []Key{trusted.pub}, Platform: platform, Running: "1.3.0"}
	offer := Offer{Version: "1.4.0", SHA256: sum(good), Signature: trusted.sign(good, Comment("1.4.0", platform))}
	require.NoError(t, policy.Check(offer, bytes.NewReader(good)), "the good release passes")

	tampered := bytes.Clone(good)
	tampered[3] ^= 1
	rolledBack := policy
	rolledBack.RolledBack = func(h []byte) bool { return bytes.Equal(h, offer.SHA256) }
	small := policy
	small.MaxSize = int64(len(good) - 1)
	editedComment := bytes.Replace(offer.Signature, []byte("receiptd 1.4.0"), []byte("receiptd 1.9.0"), 1)
	require.NotEqual(t, offer.Signature, editedComment)

	for _, tc := range []struct {
		name   string
		policy Policy
		offer  Offer
		file   []byte
		want   Reason
		words  string
	}{
		{"a file changed after signing, its hash offered", policy,
			Offer{Version: "1.4.0", SHA256: sum(tampered), Signature: offer.Signature}, tampered, ReasonSignature, "does not match the file"},
		{"a file that is not the one offered", policy, offer, tampered, ReasonHash, "the offer names"},
		{"a hash that is no SHA-256", policy, Offer{Version: "1.4.0", SHA256: []byte{1, 2}, Signature: offer.Signature}, good, ReasonHash, "not a SHA-256"},
		{"a key the till does not trust", policy,
			Offer{Version: "1.4.0", SHA256: sum(good), Signature: foreign.sign(good, Comment("1.4.0", platform))}, good, ReasonKey, foreign.pub.ID()},
		{"another version in the signed comment", policy,
			Offer{Version: "1.5.0", SHA256: sum(good), Signature: offer.Signature}, good, ReasonComment, `"receiptd 1.5.0 linux/amd64"`},
		{"another platform in the signed comment", policy,
			Offer{Version: "1.4.0", SHA256: sum(good), Signature: trusted.sign(good, Comment("1.4.0", "windows/amd64"))}, good, ReasonComment, "another version or platform"},
		{"a comment edited after signing", policy,
			Offer{Version: "1.9.0", SHA256: sum(good), Signature: editedComment}, good, ReasonSignature, "trusted comment"},
		{"an older version", policy,
			Offer{Version: "1.2.9", SHA256: sum(good), Signature: trusted.sign(good, Comment("1.2.9", platform))}, good, ReasonVersion, "older than the running 1.3.0"},
		{"the running version", policy,
			Offer{Version: "1.3.0", SHA256: sum(good), Signature: trusted.sign(good, Comment("1.3.0", platform))}, good, ReasonVersion, "is the version running"},
		{"a version that is not semantic", policy,
			Offer{Version: "latest", SHA256: sum(good), Signature: trusted.sign(good, Comment("latest", platform))}, good, ReasonVersion, "not a semantic version"},
		{"a file rolled back before", rolledBack, offer, good, ReasonRolledBack, "never tried again"},
		{"a legacy signature", policy,
			Offer{Version: "1.4.0", SHA256: sum(good), Signature: minisign.SignWithComments(trusted.priv, good, Comment("1.4.0", platform), "")}, good, ReasonSignature, "legacy"},
		{"no signature at all", policy, Offer{Version: "1.4.0", SHA256: sum(good), Signature: []byte("hello")}, good, ReasonSignature, "not a minisign signature"},
		{"a file over the size bound", small, offer, good, ReasonSize, "larger than"},
		{"no trusted key at all", Policy{Platform: platform, Running: "1.3.0"}, offer, good, ReasonKey, "does not trust"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.policy.Check(tc.offer, bytes.NewReader(tc.file))
			require.Error(t, err)
			require.Equal(t, tc.want, ReasonOf(err), err.Error())
			require.Contains(t, err.Error(), tc.words)
		})
	}
}

// TestAllowDowngrade: an older version passes only with
// update.allow_downgrade; the running version never does.
func TestAllowDowngrade(t *testing.T) {
	file := []byte("an older receiptd")
	s := newSigner(t)
	p := Policy{Keys: []Key{s.pub}, Platform: "linux/arm64", Running: "2.0.0", AllowDowngrade: true}
	o := Offer{Version: "1.9.9", SHA256: sum(file), Signature: s.sign(file, Comment("1.9.9", "linux/arm64"))}
	require.NoError(t, p.Check(o, bytes.NewReader(file)))
	p.AllowDowngrade = false
	require.Equal(t, ReasonVersion, ReasonOf(p.Check(o, bytes.NewReader(file))))
}

// TestCheckOfferNeedsNoFile: what is wrong with an offer's version, key
// or comment is known before its file is downloaded.
func TestCheckOfferNeedsNoFile(t *testing.T) {
	file := []byte("never downloaded")
	s := newSigner(t)
	p := Policy{Keys: []Key{s.pub}, Platform: "linux/amd64", Running: "1.0.0"}
	_, _, err := p.CheckOffer(Offer{Version: "1.1.0", SHA256: sum(file), Signature: s.sign(file, Comment("1.1.0", "linux/386"))})
	require.Equal(t, ReasonComment, ReasonOf(err))
	_, k, err := p.CheckOffer(Offer{Version: "1.1.0", SHA256: sum(file), Signature: s.sign(file, Comment("1.1.0", "linux/amd64"))})
	require.NoError(t, err)
	require.Equal(t, s.pub.ID(), k.ID())
}

// TestDebianMinisignFixture verifies a file signed by Debian's minisign
// 0.11 (`minisign -S -t "receiptd 1.4.0 linux/amd64" -m release.bin`,
// its key made with `minisign -G -W`; the secret key was not kept), so
// the format of the tool the packaging docs name is held on every
// platform the tests run on, Windows under Wine included.
func TestDebianMinisignFixture(t *testing.T) {
	pub, err := os.ReadFile(filepath.Join("testdata", "debian.pub"))
	require.NoError(t, err)
	k, err := ParseKey(string(pub)) // the whole .pub file, comment line and all
	require.NoError(t, err)
	require.Equal(t, "1A879DEFA3515212", k.ID(), "the ID minisign printed")
	file, err := os.ReadFile(filepath.Join("testdata", "release.bin"))
	require.NoError(t, err)
	sig, err := os.ReadFile(filepath.Join("testdata", "release.bin.minisig"))
	require.NoError(t, err)
	p := Policy{Keys: []Key{k}, Platform: "linux/amd64", Running: "1.3.2"}
	o := Offer{Version: "1.4.0", SHA256: sum(file), Signature: sig}
	require.NoError(t, p.Check(o, bytes.NewReader(file)))

	file[len(file)-2] ^= 0x20
	o.SHA256 = sum(file)
	require.Equal(t, ReasonSignature, ReasonOf(p.Check(o, bytes.NewReader(file))), "a changed byte breaks Debian's signature")
}

// TestDebianMinisignLive signs a fresh file with the minisign program, as
// a release manager does, and verifies it: the tool and this package
// agree today, not only on the day the fixture was made. CI installs
// minisign; elsewhere the test is skipped without it.
func TestDebianMinisignLive(t *testing.T) {
	bin, err := exec.LookPath("minisign")
	if err != nil {
		if os.Getenv("CI") == "true" && runtime.GOOS == "linux" {
			t.Fatal("CI must have Debian's minisign (apt-get install minisign)")
		}
		t.Skip("minisign is not installed")
	}
	dir := t.TempDir()
	pubFile, secFile, file := filepath.Join(dir, "k.pub"), filepath.Join(dir, "k.key"), filepath.Join(dir, "receiptd")
	out, err := exec.Command(bin, "-G", "-W", "-p", pubFile, "-s", secFile).CombinedOutput()
	require.NoError(t, err, string(out))
	body := make([]byte, 1<<20)
	_, _ = rand.Read(body)
	require.NoError(t, os.WriteFile(file, body, 0o600))
	out, err = exec.Command(bin, "-S", "-s", secFile, "-t", Comment("2.0.1", "linux/amd64"), "-m", file).CombinedOutput()
	require.NoError(t, err, string(out))
	pub, err := os.ReadFile(pubFile)
	require.NoError(t, err)
	line := strings.TrimSpace(strings.Split(string(pub), "\n")[1])
	require.True(t, strings.HasPrefix(line, "RW"), line)
	k, err := ParseKey(line)
	require.NoError(t, err)
	sig, err := os.ReadFile(file + ".minisig")
	require.NoError(t, err)
	p := Policy{Keys: []Key{k}, Platform: "linux/amd64", Running: "2.0.0"}
	require.NoError(t, p.Check(Offer{Version: "2.0.1", SHA256: sum(body), Signature: sig}, bytes.NewReader(body)))
}

// TestParseKeysNamesTheBadOne: a key that is not one is refused naming
// its place in update.trusted_keys.
func TestParseKeysNamesTheBadOne(t *testing.T) {
	s := newSigner(t)
	text, err := s.pub.pub.MarshalText()
	require.NoError(t, err)
	_, err = ParseKeys([]string{string(text), "RWnotakey"})
	require.ErrorContains(t, err, "update.trusted_keys[1]")
	keys, err := ParseKeys([]string{string(text)})
	require.NoError(t, err)
	require.Len(t, keys, 1)
}

// TestCompare pins the version order receiptd's releases follow.
func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.4.0", "1.3.9", 1},
		{"1.10.0", "1.9.0", 1},
		{"1.4.0-rc.1", "1.4.0", -1},
		{"v1.4.0", "1.4.0", 0},
		{"2.0.0", "10.0.0", -1},
	} {
		got, err := Compare(tc.a, tc.b)
		require.NoError(t, err, tc.a)
		require.Equal(t, tc.want, got, "%s vs %s", tc.a, tc.b)
	}
	for _, bad := range []string{"", "1.4", "1.4.0.1", "latest", "01.4.0"} {
		_, err := Compare(bad, "1.0.0")
		require.Error(t, err, bad)
	}
}
