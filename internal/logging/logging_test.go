package logging

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// readLines decodes every JSON line of a log file.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), "line %q", sc.Text())
		out = append(out, m)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestNewLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		level string
		ok    bool
	}{
		{"", true}, {"debug", true}, {"INFO", true}, {" warn ", true}, {"error", true},
		{"verbose", false}, {"trace", false}, {"warning!", false},
	} {
		t.Run(tc.level, func(t *testing.T) {
			log, done, err := New(Options{Level: tc.level, File: filepath.Join(t.TempDir(), "x.log")})
			if tc.ok {
				require.NoError(t, err)
				require.NotNil(t, log)
				require.NoError(t, done())
				return
			}
			require.ErrorIs(t, err, ErrLevel)
			require.Contains(t, err.Error(), tc.level)
			require.Nil(t, log)
		})
	}
}

func TestNewRejectsNegativeSizes(t *testing.T) {
	t.Parallel()
	_, _, err := New(Options{MaxSizeMB: -1})
	require.ErrorContains(t, err, "max_size_mb")
	_, _, err = New(Options{MaxFiles: -1})
	require.ErrorContains(t, err, "max_files")
}

func TestNewBadPathIsAnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	_, _, err := New(Options{File: filepath.Join(blocker, "receiptd.log")})
	require.Error(t, err)
	require.Contains(t, err.Error(), blocker)
}

func TestNewCreatesMissingDirectory(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "var", "log", "receiptd.log")
	log, done, err := New(Options{File: path})
	require.NoError(t, err)
	log.Info("first line")
	require.NoError(t, done())
	require.Len(t, readLines(t, path), 1)
	if filepath.Separator == '/' {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
}

func TestLevelFiltersAndJSONShape(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.log")
	log, done, err := New(Options{Level: "warn", File: path})
	require.NoError(t, err)
	log.Named("sync").Info("not written")
	log.Named("sync").Warn("written", zap.Duration("after", 1500*time.Millisecond))
	require.NoError(t, done())
	require.NoError(t, done(), "done may be called twice")

	lines := readLines(t, path)
	require.Len(t, lines, 1)
	require.Equal(t, "written", lines[0]["msg"])
	require.Equal(t, "warn", lines[0]["level"])
	require.Equal(t, "sync", lines[0]["logger"])
	require.Equal(t, "1.5s", lines[0]["after"])
	ts, ok := lines[0]["ts"].(string)
	require.True(t, ok)
	parsed, err := time.Parse(time.RFC3339Nano, ts)
	require.NoError(t, err)
	require.Equal(t, time.UTC, parsed.Location())
	require.Contains(t, lines[0]["caller"], "logging_test.go")
}

func TestConsoleEncoderIsReadable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "console.log")
	log, done, err := New(Options{File: path, Console: true})
	require.NoError(t, err)
	log.Info("receipt queued", zap.String("queueId", "Q000000000042"), CustomerTin("12345678901"))
	require.NoError(t, done())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	line := string(b)
	require.False(t, strings.HasPrefix(line, "{"), "console output is not JSON: %s", line)
	require.Contains(t, line, "INFO")
	require.Contains(t, line, "receipt queued")
	require.Contains(t, line, "Q000000000042")
	require.Contains(t, line, "*****901")
	require.NotContains(t, line, "12345678901")
}

func TestRotationAtSmallSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "receiptd.log")
	log, done, err := New(Options{File: path, MaxSizeMB: 1, MaxFiles: 2})
	require.NoError(t, err)

	// About 4.5 MiB in lines of ~1 KiB: four rotations at 1 MiB.
	pad := strings.Repeat("x", 1000)
	for i := 0; i < 4600; i++ {
		log.Info("filler", zap.Int("i", i), zap.String("pad", pad))
	}
	require.NoError(t, done())

	// Old files are removed by lumberjack in the background after a rotation.
	require.Eventually(t, func() bool {
		entries, err := os.ReadDir(dir)
		return err == nil && len(entries) == 3
	}, 5*time.Second, 10*time.Millisecond, "current file + MaxFiles rotated files")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		require.LessOrEqual(t, info.Size(), int64(1<<20), e.Name())
		require.True(t, strings.HasPrefix(e.Name(), "receiptd"), e.Name())
	}
	// The newest lines are in the current file, intact.
	lines := readLines(t, path)
	require.NotEmpty(t, lines)
	require.EqualValues(t, 4599, lines[len(lines)-1]["i"])
	fi, err := os.Stat(path)
	require.NoError(t, err)
	if filepath.Separator == '/' {
		require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	}
}

// TestLevelChangesInPlace: with Options.Atom, SetLevel changes what the
// logger and the sub-loggers made before write, without a new logger
// (log.level applied in place); a bad level leaves it as it was.
func TestLevelChangesInPlace(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "receiptd.log")
	atom := zap.NewAtomicLevel()
	log, done, err := New(Options{Level: "warn", File: path, Atom: &atom})
	require.NoError(t, err)
	sub := log.Named("sync")
	sub.Debug("not written: warn")
	require.NoError(t, SetLevel(atom, "debug"))
	sub.Debug("written: debug")
	require.ErrorIs(t, SetLevel(atom, "loud"), ErrLevel)
	sub.Debug("written: still debug")
	require.NoError(t, SetLevel(atom, ""))
	sub.Debug("not written: info")
	require.NoError(t, done())
	var msgs []string
	for _, l := range readLines(t, path) {
		msgs = append(msgs, l["msg"].(string))
	}
	require.Equal(t, []string{"written: debug", "written: still debug"}, msgs)
}
