package release

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

var platform = runtime.GOOS + "/" + runtime.GOARCH

// release writes a release file signed by s as version into dir.
func release(t *testing.T, s updatetest.Signer, dir, version string, body string) (string, update.Offer) {
	t.Helper()
	path := filepath.Join(dir, "receiptd-"+version)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	sig := s.Sign([]byte(body), update.Comment(version, platform))
	return path, update.Offer{Version: version, Signature: sig}
}

func policy(t *testing.T, s updatetest.Signer, st State) update.Policy {
	keys, err := update.ParseKeys([]string{s.PublicKey()})
	require.NoError(t, err)
	return update.Policy{Keys: keys, Platform: platform, Running: "1.0.0", RolledBack: st.IsRolledBack}
}

// TestStageKeepsTheCheckedFile: a release that passes is copied whole
// under versions/<version>-<hash>/, executable; one refused leaves no
// folder, and a file rolled back before is refused by its hash.
func TestStageKeepsTheCheckedFile(t *testing.T) {
	t.Parallel()
	dataDir, src := t.TempDir(), t.TempDir()
	s := updatetest.NewSigner(t)
	path, o := release(t, s, src, "1.1.0", "the new receiptd")

	v, err := Stage(dataDir, policy(t, s, State{}), o, path)
	require.NoError(t, err)
	require.Equal(t, "1.1.0", v.Version)
	require.Equal(t, layout.Version(dataDir, "1.1.0", v.SHA256, Exe()), v.Path)
	got, err := os.ReadFile(v.Path)
	require.NoError(t, err)
	require.Equal(t, "the new receiptd", string(got))
	if runtime.GOOS != "windows" {
		info, err := os.Stat(v.Path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o755), info.Mode().Perm())
	}
	entries, err := os.ReadDir(filepath.Dir(v.Path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	other := updatetest.NewSigner(t)
	for name, c := range map[string]struct {
		p    update.Policy
		o    update.Offer
		body string
		want update.Reason
	}{
		"untrusted key": {policy(t, s, State{}), release2(t, other, src, "1.2.0"), "", update.ReasonKey},
		"not newer":     {policy(t, s, State{}), release2(t, s, src, "0.9.0"), "", update.ReasonVersion},
		"rolled back": {policy(t, s, State{RolledBack: []string{v.SHA256}}),
			update.Offer{Version: "1.1.0", Signature: o.Signature}, "the new receiptd", update.ReasonRolledBack},
		"bad signature": {policy(t, s, State{}), update.Offer{Version: "1.2.0",
			Signature: s.Sign([]byte("another file"), update.Comment("1.2.0", platform))}, "x", update.ReasonSignature},
	} {
		dd := t.TempDir()
		file := filepath.Join(src, "f-"+hex.EncodeToString([]byte(name)))
		require.NoError(t, os.WriteFile(file, []byte(c.body), 0o644))
		_, err := Stage(dd, c.p, c.o, file)
		require.Equal(t, c.want, update.ReasonOf(err), "%s: %v", name, err)
		entries, _ := os.ReadDir(layout.Versions(dd))
		require.Empty(t, entries, name)
	}
}

// release2 is an offer of an empty file signed by s as version.
func release2(t *testing.T, s updatetest.Signer, dir, version string) update.Offer {
	_, o := release(t, s, dir, version+"-sig", "")
	o.Version = version
	o.Signature = s.Sign(nil, update.Comment(version, platform))
	return o
}

// TestStateRoundTrip: update.json reads back as written; a missing file
// is Idle; a rollback keeps the hash for good and keeps Running; an
// install moves Running to Previous.
func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st, err := ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, Idle, st.Phase)

	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	st.Offered = &Version{Version: "1.1.0", SHA256: "ab12", Path: "/x"}
	st.Enter(Probation, "", now)
	require.True(t, st.Interrupted())
	st.RollBack("exit status 1", now)
	require.Equal(t, []string{"ab12"}, st.RolledBack)
	require.Nil(t, st.Running)
	require.NoError(t, st.Write(dir))
	back, err := ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, st, back)
	require.Equal(t, "rolled back: exit status 1", back.Message)
	sum, _ := hex.DecodeString("ab12")
	require.True(t, back.IsRolledBack(sum))

	back.Offered = &Version{Version: "1.2.0", SHA256: "cd34", Path: "/y"}
	back.Install(now)
	require.Equal(t, Installed, back.Phase)
	require.Equal(t, "1.2.0", back.Running.Version)
	require.Equal(t, &Version{}, back.Previous)

	require.NoError(t, os.WriteFile(layout.Update(dir), []byte("{"), 0o644))
	_, err = ReadState(dir)
	require.Error(t, err, "a damaged state is never guessed")
}

// TestPruneKeepsWhatTheStateNames: folders beyond keep go, oldest first,
// never the running, previous or offered one.
func TestPruneKeepsWhatTheStateNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	names := []string{"1.0.0-aaaaaaaaaaaa", "1.1.0-bbbbbbbbbbbb", "1.2.0-cccccccccccc", "1.3.0-dddddddddddd"}
	for i, n := range names {
		p := filepath.Join(layout.Versions(dir), n)
		require.NoError(t, os.MkdirAll(p, 0o755))
		at := time.Date(2026, 1, 1+i, 0, 0, 0, 0, time.UTC)
		require.NoError(t, os.Chtimes(p, at, at))
	}
	st := State{Running: &Version{Path: filepath.Join(layout.Versions(dir), names[0], "receiptd")}}
	require.NoError(t, Prune(dir, st, 2))
	entries, err := os.ReadDir(layout.Versions(dir))
	require.NoError(t, err)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	require.Equal(t, []string{names[0], names[3]}, left)
}

// TestRefusalsAreCountedForGood: every refusal entered counts, the count
// survives update.json's round trip and the states that follow (only the
// last refusal's reason is kept in Message), so the refusals counter of
// the metrics never goes down.
func TestRefusalsAreCountedForGood(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	var st State
	st.Enter(Verifying, "checking", now)
	st.Enter(Refused, "refused (key): not a trusted key", now)
	st.Enter(Verifying, "checking", now)
	st.Enter(Refused, "refused (version): 0.9.0 is not newer", now)
	require.Equal(t, uint64(2), st.Refusals)
	st.Offered = &Version{Version: "1.2.0", SHA256: "cd34", Path: "/y"}
	st.Enter(Staged, "1.2.0 verified", now)
	st.Install(now)
	require.NoError(t, st.Write(dir))
	back, err := ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, uint64(2), back.Refusals, "kept across the install and the file")
	require.Equal(t, Installed, back.Phase)
}
