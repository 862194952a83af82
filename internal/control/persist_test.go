package control

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap/zaptest"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
)

type okApplier struct{}

func (okApplier) Apply(context.Context, config.Config) error { return nil }

func managed(t *testing.T) config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Control.OpAMPURL = "wss://hq.example/v1/opamp"
	return cfg
}

func TestInstanceUIDSurvivesRestarts(t *testing.T) {
	cfg := managed(t)
	opts := Options{Start: config.Merged{Config: cfg}, Version: "v1", Log: zaptest.NewLogger(t), Applier: okApplier{}}
	first, err := New(opts)
	require.NoError(t, err)
	id, err := uuid.Parse(first.InstanceUID())
	require.NoError(t, err)
	require.Equal(t, uuid.Version(7), id.Version())
	for range 3 {
		again, err := New(opts)
		require.NoError(t, err)
		require.Equal(t, first.InstanceUID(), again.InstanceUID(), "the same till after a restart or upgrade")
	}
	other := managed(t)
	fresh, err := New(Options{Start: config.Merged{Config: other}, Version: "v1", Log: zaptest.NewLogger(t), Applier: okApplier{}})
	require.NoError(t, err)
	require.NotEqual(t, first.InstanceUID(), fresh.InstanceUID(), "another till")

	path := filepath.Join(layout.Control(cfg.DataDir), uidFile)
	require.NoError(t, os.WriteFile(path, []byte("not a uuid\n"), 0o600))
	_, err = New(opts)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "delete the file to get a new UID")
}

func TestStatusKeptAcrossRestarts(t *testing.T) {
	for _, c := range []struct {
		name       string
		saved      RemoteConfig
		wantStatus string
		wantMsg    string
	}{
		{"applied", RemoteConfig{Hash: "ab", Status: StatusApplied, AppliedAt: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC), ServerHash: "01"}, StatusApplied, ""},
		{"failed", RemoteConfig{Hash: "cd", Status: StatusFailed, Message: "line 2: auth.token: can never be set remotely", ServerHash: "02"}, StatusFailed, "auth.token"},
		{"interrupted while applying", RemoteConfig{Hash: "ef", Status: StatusApplying, ServerHash: "03"}, StatusFailed, "stopped while applying"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := managed(t)
			require.NoError(t, newDisk(cfg.DataDir).saveStatus(c.saved))
			cl, err := New(Options{Start: config.Merged{Config: cfg}, Version: "v1", Log: zaptest.NewLogger(t), Applier: okApplier{}})
			require.NoError(t, err)
			got := cl.Status().RemoteConfig
			require.Equal(t, c.wantStatus, got.Status)
			require.Equal(t, c.saved.Hash, got.Hash)
			require.Contains(t, got.Message, c.wantMsg)
			require.NotNil(t, cl.remoteStatusProto(), "the server is told which config the till runs")
		})
	}
}

func TestStartConfig(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	own := write("own.toml", "data_dir = '"+dataDir+"'\n[control]\nopamp_url = \"wss://hq.example/v1/opamp\"\nallow = [\"accept.queued_answer\"]\n")
	cfg, err := config.Load(own)
	require.NoError(t, err)

	m, err := StartConfig(own, cfg)
	require.NoError(t, err)
	require.Empty(t, m.Hash, "nothing kept yet: the own file")

	d := newDisk(dataDir)
	require.NoError(t, d.write(goodFile, []byte("[accept]\nqueued_answer = \"error\"\n")))
	m, err = StartConfig(own, cfg)
	require.NoError(t, err)
	require.Equal(t, config.QueuedAnswerError, m.Config.Accept.QueuedAnswer)
	require.Equal(t, []string{"accept.queued_answer"}, m.RemoteKeys)

	off := cfg
	off.Control.OpAMPURL = ""
	m, err = StartConfig(own, off)
	require.NoError(t, err)
	require.Equal(t, config.QueuedAnswer202, m.Config.Accept.QueuedAnswer, "with [control] off the kept fragment is not used")

	// The own file changed so that the kept fragment is no longer allowed.
	own2 := write("own2.toml", "data_dir = '"+dataDir+"'\n[control]\nopamp_url = \"wss://hq.example/v1/opamp\"\nallow = [\"sync\"]\n")
	cfg2, err := config.Load(own2)
	require.NoError(t, err)
	m, err = StartConfig(own2, cfg2)
	require.ErrorContains(t, err, "starts with its own file")
	require.ErrorContains(t, err, "accept.queued_answer: a head office may set it only when control.allow of the till's own file names")
	require.Equal(t, config.QueuedAnswer202, m.Config.Accept.QueuedAnswer)

	entries, err := os.ReadDir(d.dir)
	require.NoError(t, err)
	for _, e := range entries {
		require.False(t, strings.HasSuffix(e.Name(), ".tmp"), "no temporary file left: %s", e.Name())
	}
}

// TestMergeOwnKeepsATillsSettingsMadeInCode: a till without a file of its
// own (receiptd demo) lays a fragment over the settings it started with:
// it used to be laid over the defaults, so a demo given [sync]
// concurrency = 3 by a head office was refused, its data_dir "changed" to
// the default one.
func TestMergeOwnKeepsATillsSettingsMadeInCode(t *testing.T) {
	own := config.Default()
	own.DataDir = t.TempDir()
	m, err := mergeOwn("", &own, []byte("[sync]\nconcurrency = 3\n"))
	require.NoError(t, err)
	require.Equal(t, own.DataDir, m.Config.DataDir)
	require.Equal(t, 3, m.Config.Sync.Concurrency)
	m, err = mergeOwn("", nil, []byte("[sync]\nconcurrency = 3\n"))
	require.NoError(t, err)
	require.Equal(t, config.Default().DataDir, m.Config.DataDir, "no own config: the defaults")
}
