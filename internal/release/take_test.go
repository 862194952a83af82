package release

import (
	"crypto/sha256"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// TestDevBuildTakesAReleaseOnlyWithAllowDowngrade: a build from source
// ("dev") compares as older than any release only when
// update.allow_downgrade says so; the version an update installed is the
// running one.
func TestDevBuildTakesAReleaseOnlyWithAllowDowngrade(t *testing.T) {
	t.Parallel()
	s := updatetest.NewSigner(t)
	till := Till{TrustedKeys: []string{s.PublicKey()}, Binary: "dev"}
	_, err := till.Policy(State{})
	require.ErrorIs(t, err, ErrDevBuild)

	till.AllowDowngrade = true
	p, err := till.Policy(State{})
	require.NoError(t, err)
	require.Equal(t, DevRunning, p.Running)

	p, err = till.Policy(State{Running: &Version{Version: "1.1.0", Path: "/x"}})
	require.NoError(t, err)
	require.Equal(t, "1.1.0", p.Running, "the version an update installed is the running one")
}

// TestTakeRecordsEachStep: a release that passes is staged in
// update.json with the copy kept; a refused one is recorded refused with
// the offer and the reason (what the head office reads), whether the
// refusal comes from the offer alone or from the file; while a switch is
// under way nothing is taken or recorded.
func TestTakeRecordsEachStep(t *testing.T) {
	t.Parallel()
	s, other := updatetest.NewSigner(t), updatetest.NewSigner(t)
	dataDir, src := t.TempDir(), t.TempDir()
	at := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	till := Till{DataDir: dataDir, TrustedKeys: []string{s.PublicKey()}, Binary: "1.0.0", Now: func() time.Time { return at }}

	foreign := release2(t, other, src, "1.2.0")
	foreign.SHA256 = make([]byte, sha256.Size)
	err := till.CheckOffer(foreign)
	require.Equal(t, update.ReasonKey, update.ReasonOf(err), "%v", err)
	st, err := ReadState(dataDir)
	require.NoError(t, err)
	require.Equal(t, Refused, st.Phase)
	require.Equal(t, "1.2.0", st.Offered.Version)
	require.Equal(t, "0000000000000000000000000000000000000000000000000000000000000000", st.Offered.SHA256)
	require.Contains(t, st.Message, "does not trust")
	require.Equal(t, at, st.Since)

	path, o := release(t, s, src, "1.1.0", "the new receiptd")
	tampered := path + ".tampered"
	require.NoError(t, os.WriteFile(tampered, []byte("the new receiptd, changed"), 0o644))
	_, err = till.Take(o, tampered, "the download")
	require.Equal(t, update.ReasonSignature, update.ReasonOf(err), "%v", err)
	st, err = ReadState(dataDir)
	require.NoError(t, err)
	require.Equal(t, Refused, st.Phase)
	require.Equal(t, "1.1.0", st.Offered.Version)

	v, err := till.Take(o, path, "the download")
	require.NoError(t, err)
	st, err = ReadState(dataDir)
	require.NoError(t, err)
	require.Equal(t, Staged, st.Phase)
	require.Equal(t, v, *st.Offered)
	require.FileExists(t, v.Path)

	_, err = till.Take(o, path+".missing", "the download")
	require.Error(t, err)
	require.Empty(t, update.ReasonOf(err))
	again, err := ReadState(dataDir)
	require.NoError(t, err)
	require.Equal(t, st, again, "a file that cannot be read is no verdict: update.json as it was")

	st.Enter(Probation, "on probation", at)
	require.NoError(t, st.Write(dataDir))
	_, err = till.Take(o, path, "the download")
	require.ErrorIs(t, err, ErrBusy)
	require.ErrorIs(t, till.CheckOffer(foreign), ErrBusy)
	again, err = ReadState(dataDir)
	require.NoError(t, err)
	require.Equal(t, st, again, "nothing recorded while busy")
}
