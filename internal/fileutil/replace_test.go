package fileutil

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReplace(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	write := func(text string, err error) func(*os.File) error {
		return func(f *os.File) error {
			if _, werr := f.WriteString(text); werr != nil {
				return werr
			}
			return err
		}
	}
	for _, tc := range []struct {
		name     string
		leftover bool // a temporary file a killed replace left
		write    func(*os.File) error
		opts     ReplaceOptions
		wantErr  error
		want     string // path's content afterwards
	}{
		{name: "replaces", write: write("new", nil), want: "new"},
		{name: "a leftover temporary file is removed first", leftover: true, write: write("new", nil), want: "new"},
		{name: "own temporary name", write: write("new", nil), opts: ReplaceOptions{Temp: "partial"}, want: "new"},
		{name: "a failed write keeps the old file", write: write("half", boom), wantErr: boom, want: "old"},
		{name: "a failed check keeps the old file", write: write("bad", nil),
			opts: ReplaceOptions{Check: func(tmp string) error {
				b, err := os.ReadFile(tmp)
				require.NoError(t, err)
				require.Equal(t, "bad", string(b), "the check sees the complete file")
				return boom
			}}, wantErr: boom, want: "old"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "file")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
			if tc.opts.Temp != "" {
				tc.opts.Temp = filepath.Join(dir, tc.opts.Temp)
			}
			if tc.leftover {
				require.NoError(t, os.WriteFile(path+".tmp", []byte("stale"), 0o600))
			}
			err := Replace(path, tc.write, tc.opts)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(b))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, entries, 1, "no temporary file is left: %v", entries)
		})
	}
}

func TestWriteFileAtomicAndRename(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "marker")
	require.NoError(t, WriteFileAtomic(path, []byte("one"), 0o640))
	require.NoError(t, WriteFileAtomic(path, []byte("two"), 0o640))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two", string(b))
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())
	}

	sub := filepath.Join(dir, "aside")
	require.NoError(t, os.Mkdir(sub, 0o750))
	require.NoError(t, Rename(path, filepath.Join(sub, "marker.kept")))
	require.NoFileExists(t, path)
	require.FileExists(t, filepath.Join(sub, "marker.kept"))
	require.Error(t, Rename(path, filepath.Join(sub, "again")), "a missing file is an error")
}
