package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
	"github.com/receiptd/receiptd/internal/update"
)

// Exe is a release executable's name on this platform.
func Exe() string {
	if runtime.GOOS == "windows" {
		return layout.VersionExe + ".exe"
	}
	return layout.VersionExe
}

// Stage copies the release file at path into dataDir's versions/, as
// versions/<version>-<hash>/receiptd, only when p passes o on the bytes
// copied (the file is read once: what is checked is what is kept). An
// offer's SHA-256 (a head office's content_hash) must be the file's; an
// offer without one (`update apply`) takes the file's. It
// returns the Version kept. The copy is written as a temporary file,
// fsynced, made executable, renamed and its folder fsynced; a refusal
// (update.RefusedError) leaves nothing behind.
func Stage(dataDir string, p update.Policy, o update.Offer, path string) (Version, error) {
	f, err := os.Open(path)
	if err != nil {
		return Version{}, fmt.Errorf("open the release file: %w", err)
	}
	defer f.Close()
	sum := sha256.New()
	if _, err := io.Copy(sum, io.LimitReader(f, update.MaxFile+1)); err != nil {
		return Version{}, fmt.Errorf("read the release file: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return Version{}, err
	}
	if len(o.SHA256) == 0 { // a file from an operator: its own hash
		o.SHA256 = sum.Sum(nil)
	}
	hexSum := hex.EncodeToString(o.SHA256)
	// CheckOffer first: a refusal known from the signature alone makes no
	// folder at all.
	if _, _, err := p.CheckOffer(o); err != nil {
		return Version{}, err
	}
	dst := layout.Version(dataDir, o.Version, hexSum, Exe())
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Version{}, fmt.Errorf("make %s: %w", dir, err)
	}
	if err := fileutil.SyncDir(layout.Versions(dataDir)); err != nil {
		return Version{}, err
	}
	err = fileutil.Replace(dst, func(tmp *os.File) error {
		// The hash taken above is checked again on the bytes copied.
		return p.Check(o, io.TeeReader(f, tmp))
	}, fileutil.ReplaceOptions{Perm: 0o755})
	if err != nil {
		_ = os.Remove(dir) // only when empty: an earlier copy stays
		return Version{}, err
	}
	return Version{Version: o.Version, SHA256: hexSum, Path: dst}, nil
}

// Prune removes the folders of versions/ beyond keep, oldest first,
// never one st names (running, previous, offered).
func Prune(dataDir string, st State, keep int) error {
	root := layout.Versions(dataDir)
	entries, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	named := map[string]bool{}
	for _, v := range []*Version{st.Running, st.Previous, st.Offered} {
		if v != nil && v.Path != "" {
			named[filepath.Base(filepath.Dir(v.Path))] = true
		}
	}
	type folder struct {
		name string
		mod  int64
	}
	var others []folder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !e.IsDir() || named[e.Name()] {
			continue
		}
		others = append(others, folder{e.Name(), info.ModTime().UnixNano()})
	}
	sort.Slice(others, func(i, j int) bool { return others[i].mod > others[j].mod })
	room := max(keep-len(named), 0)
	for i, f := range others {
		if i < room {
			continue
		}
		if err := os.RemoveAll(filepath.Join(root, f.name)); err != nil {
			return fmt.Errorf("remove an old version: %w", err)
		}
	}
	return nil
}
