package powercut_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/bbolt"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/powercut"
)

// Environment of TestPowerCut. Every variable is optional.
const (
	// RoundsEnv is the number of power cuts against the real binary
	// (default 3; CI runs 50).
	RoundsEnv = "RECEIPTD_POWERCUT_ROUNDS"
	// ControlRoundsEnv is the number of cuts against each negative control
	// (default 3); 0 skips the controls.
	ControlRoundsEnv = "RECEIPTD_POWERCUT_CONTROL_ROUNDS"
	// BinEnv names a prebuilt binary to test instead of building
	// ./cmd/receiptd (RECEIPTD_BIN, if harness.Build honours it, also works).
	BinEnv = "RECEIPTD_POWERCUT_BIN"
	// ControlBinEnv names a prebuilt NoSync control binary instead of
	// building one with the tag receiptd_nosync_unsafe.
	ControlBinEnv = "RECEIPTD_POWERCUT_CONTROL_BIN"
	// DirControlBinEnv names a prebuilt control binary that skips directory
	// fsyncs instead of building one with the tag receiptd_nodirsync_unsafe.
	DirControlBinEnv = "RECEIPTD_POWERCUT_DIRCONTROL_BIN"
	// SeedEnv repeats a run's random choices (timing still differs).
	SeedEnv = "RECEIPTD_POWERCUT_SEED"
)

// roundsPerDisk: every this many rounds start on a fresh, empty data
// directory, so first starts are cut too.
const roundsPerDisk = 5

func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	require.NoError(t, err, name)
	return n
}

// TestPowerCut runs the real receiptd on the power-cut file system under
// concurrent POS load and cuts the power at random moments: the daemon is
// SIGKILLed and everything not fsynced is dropped, then it restarts on what
// survived. Every receipt answered 2xx must still be there (listed, and
// replayed by its Idempotency-Key) and the file must pass bbolt's check.
// The same rounds against a binary built with NoSync, and against one that
// skips directory fsyncs, must lose receipts or the file: that proves the
// rounds can see each missing fsync.
func TestPowerCut(t *testing.T) {
	powercut.Need(t)
	rounds, controlRounds := envInt(t, RoundsEnv, 3), envInt(t, ControlRoundsEnv, 3)
	seed := uint64(time.Now().UnixNano())
	if os.Getenv(SeedEnv) != "" {
		seed = uint64(envInt(t, SeedEnv, 0))
	}
	t.Logf("power-cut seed=%d (repeat with %s=%d) rounds=%d control=%d", seed, SeedEnv, seed, rounds, controlRounds)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rounds+2*controlRounds)*30*time.Second+3*time.Minute)
	defer cancel()
	s := sim.New(sim.Options{Seed: int64(seed)})
	require.NoError(t, s.Start("127.0.0.1:0"))
	t.Cleanup(func() { _ = s.Close() })

	bin := binary(ctx, t, BinEnv, func(dir string) (string, error) { return harness.Build(ctx, dir) })
	fs := newBench(ctx, t, "fsync", bin, s, seed)
	fs.partial = true
	tot := fs.run(rounds)
	t.Logf("power-cut totals (fsync, %s): %s", bin, tot)
	require.Positive(t, tot.acknowledged, "no receipt was acknowledged: the rounds proved nothing")
	require.Zero(t, tot.lost+tot.corrupt+tot.refused, "acknowledged receipts lost, database damaged, or start refused after a power cut")
	if rounds >= 20 {
		require.Positive(t, tot.midCommit, "no cut dropped an unsynced write: the rounds never cut inside a commit")
	}

	if controlRounds == 0 {
		t.Log("negative controls skipped (" + ControlRoundsEnv + "=0)")
		return
	}
	for i, c := range controls {
		bin := binary(ctx, t, c.env, func(dir string) (string, error) {
			return harness.BuildTagged(ctx, dir, "receiptd-"+c.tag, c.tag)
		})
		tot := newBench(ctx, t, c.tag, bin, s, seed+1+uint64(i)).run(controlRounds)
		t.Logf("power-cut totals (negative control, %s, %s): %s", c.what, bin, tot)
		require.Positive(t, tot.lost+tot.corrupt+tot.refused,
			"the control with %s lost nothing: these rounds cannot catch it", c.what)
	}
}

// controls are the negative controls: builds that skip one kind of fsync
// (build tags, never settings; see internal/store) and so must lose
// receipts in these rounds.
var controls = []struct{ what, tag, env string }{
	{"NoSync (no fsync of bbolt commits or of the write-ahead log)", "receiptd_nosync_unsafe", ControlBinEnv},
	{"no directory fsync", "receiptd_nodirsync_unsafe", DirControlBinEnv},
}

func binary(ctx context.Context, t *testing.T, env string, build func(dir string) (string, error)) string {
	if p := os.Getenv(env); p != "" {
		abs, err := filepath.Abs(p)
		require.NoError(t, err, env)
		_, err = os.Stat(abs)
		require.NoError(t, err, env)
		return abs
	}
	require.NoError(t, ctx.Err())
	bin, err := build(t.TempDir())
	require.NoError(t, err)
	return bin
}

// totals are a run's figures.
type totals struct {
	rounds, firstStarts, startupCuts, acknowledged, verified, replayed, lost, corrupt, refused int
	daemonMadeDir                                                                              int // fresh disks whose data directory the daemon created
	partial                                                                                    int // cuts that kept part of the unsynced writes
	midCommit                                                                                  int // cuts that dropped unsynced pages
	cut                                                                                        powercut.Stats
}

func (x totals) String() string {
	return fmt.Sprintf("rounds=%d first-starts=%d (data directory made by receiptd: %d) startup-cuts=%d acknowledged=%d checks=%d replayed=%d lost=%d corrupt=%d refused=%d "+
		"partial-cuts=%d cuts-with-unsynced-writes=%d unsynced-at-cuts: pages=%d sizes=%d directories=%d",
		x.rounds, x.firstStarts, x.daemonMadeDir, x.startupCuts, x.acknowledged, x.verified, x.replayed, x.lost, x.corrupt, x.refused, x.partial, x.midCommit,
		x.cut.UnsyncedPages, x.cut.UnsyncedSizes, x.cut.UnsyncedDirs)
}

// bench runs rounds against one binary.
type bench struct {
	ctx context.Context
	t   *testing.T
	bin string
	sim *sim.Sim
	rng *rand.Rand
	tag string // prefix of this bench's idempotency keys
	// partial lets half the cuts keep part of the unsynced writes. The
	// controls cut strictly: a missing fsync loses data there every time,
	// while a partial cut may keep what was not synced by chance.
	partial bool
	mnt     string // where the current disk is mounted
	cfg     string // folder of the config file and the daemon's log
	disk    *powercut.Disk
	m       *powercut.Mounted
	acks    []ack // acknowledged on the current disk
	last    int   // acks[last:] were acknowledged in the last round
	tot     totals
}

func newBench(ctx context.Context, t *testing.T, tag, bin string, s *sim.Sim, seed uint64) *bench {
	b := &bench{ctx: ctx, t: t, tag: tag, bin: bin, sim: s, rng: rand.New(rand.NewPCG(seed, 7)),
		mnt: t.TempDir(), cfg: t.TempDir()}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s: receiptd log (end):\n%s", tag, b.logTail())
		}
		if b.m != nil {
			_ = b.m.Unmount()
		}
	})
	return b
}

// run makes n power cuts, then checks the last disk once more.
func (b *bench) run(n int) totals {
	for r := range n {
		if r%roundsPerDisk == 0 || b.disk == nil {
			if b.disk != nil {
				b.check(r, false)
			}
			b.freshDisk()
		}
		b.round(r)
	}
	if b.disk != nil {
		b.check(n, false)
	}
	return b.tot
}

// freshDisk replaces the disk with an empty one: half the time holding an
// empty data directory, as an installer leaves it (created and its parent
// fsynced), else without one, for the daemon to create.
func (b *bench) freshDisk() {
	if b.m != nil {
		require.NoError(b.t, b.m.Unmount())
		b.m = nil
	}
	b.disk, b.acks, b.last = powercut.NewDisk(), nil, 0
	b.mount()
	b.tot.firstStarts++
	if b.rng.IntN(2) == 0 {
		b.tot.daemonMadeDir++
	} else {
		require.NoError(b.t, os.Mkdir(b.dataDir(), 0o750))
		dir, err := os.Open(b.mnt)
		require.NoError(b.t, err)
		require.NoError(b.t, dir.Sync())
		require.NoError(b.t, dir.Close())
	}
	if b.rng.IntN(2) == 0 {
		b.startupCut()
		b.tot.startupCuts++
	}
}

func (b *bench) mount() {
	m, err := powercut.Mount(b.disk, b.mnt)
	require.NoError(b.t, err)
	b.m = m
}

func (b *bench) dataDir() string { return filepath.Join(b.mnt, "data") }

func (b *bench) config() config.Config {
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = b.dataDir()
	cfg.Upstream.BaseURL, cfg.Upstream.LookupBaseURL = b.sim.URL(), b.sim.URL()
	cfg.Upstream.Timeout = config.Dur(time.Second)
	cfg.Sync.MinBackoff, cfg.Sync.MaxBackoff = config.Dur(50*time.Millisecond), config.Dur(500*time.Millisecond)
	cfg.Accept.Wait = config.Dur(300 * time.Millisecond)
	cfg.Log.Level = "warn"
	return cfg
}

// cutPower is the power cut: the disk drops what is unsynced and fails
// everything after, the daemon dies at once, and the disk is unmounted
// (the kernel's page cache with it) and mounted again.
func (b *bench) cutPower(p *harness.Process) {
	lost := b.disk.PowerOff()
	require.NoError(b.t, p.Kill())
	require.NoError(b.t, b.m.Unmount())
	b.m = nil
	b.disk.PowerOn()
	b.mount()
	if lost.UnsyncedPages > 0 {
		b.tot.midCommit++
	}
	b.tot.cut.UnsyncedPages += lost.UnsyncedPages
	b.tot.cut.UnsyncedSizes += lost.UnsyncedSizes
	b.tot.cut.UnsyncedDirs += lost.UnsyncedDirs
}

// checkFile runs bbolt's check on the database, read-only, in a child
// process: bbolt reads through mmap, and a page fault served by this very
// process's FUSE server would deadlock against the Go garbage collector's
// stop-the-world (the faulting thread cannot stop; the server's can). A
// missing file is an error (missing true) only once receipts were
// acknowledged on this disk.
func (b *bench) checkFile() (missing bool, err error) {
	path := layout.DB(b.dataDir())
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if len(b.acks) == 0 {
			return false, nil
		}
		return true, fmt.Errorf("%s is gone", path)
	}
	cmd := exec.CommandContext(b.ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), checkDBEnv+"="+path)
	if out, err := cmd.CombinedOutput(); err != nil {
		return false, fmt.Errorf("check %s: %w: %s", path, err, out)
	}
	return false, nil
}

// checkDBEnv, set in a child process of the test binary, makes TestMain
// check that database and exit.
const checkDBEnv = "RECEIPTD_POWERCUT_CHECK_DB"

func TestMain(m *testing.M) {
	if path := os.Getenv(checkDBEnv); path != "" {
		if err := checkDB(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func checkDB(path string) error {
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for e := range tx.Check() {
			errs = append(errs, e)
		}
		return errors.Join(errs...)
	})
}
