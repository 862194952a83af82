package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/receiptd/receiptd/internal/fileutil"
	"github.com/receiptd/receiptd/internal/layout"
)

// Files in the channel's folder, <data_dir>/control (named, with what
// each holds, in layout).
const (
	uidFile      = layout.ControlUIDFile
	receivedFile = layout.ControlReceivedFile
	goodFile     = layout.ControlGoodFile
	statusFile   = layout.ControlStatusFile
)

// disk reads and writes the files of <data_dir>/control.
type disk struct{ dir string }

func newDisk(dataDir string) disk { return disk{dir: layout.Control(dataDir)} }

// instanceUID returns the till's UID, creating it the first time.
func (d disk) instanceUID() (uuid.UUID, error) {
	path := filepath.Join(d.dir, uidFile)
	data, err := fileutil.ReadFile(path)
	switch {
	case err == nil:
		id, perr := uuid.Parse(strings.TrimSpace(string(data)))
		if perr != nil {
			return uuid.UUID{}, fmt.Errorf("read instance UID %s: %w (delete the file to get a new UID; the head office then sees a new till)", path, perr)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return uuid.UUID{}, fmt.Errorf("read instance UID: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("create instance UID: %w", err)
	}
	if err := d.write(uidFile, []byte(id.String()+"\n")); err != nil {
		return uuid.UUID{}, err
	}
	return id, nil
}

// fragment returns the content of name, nil when it does not exist.
func (d disk) fragment(name string) ([]byte, error) {
	data, err := fileutil.ReadFile(filepath.Join(d.dir, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read remote config: %w", err)
	}
	return data, nil
}

// status returns the last saved RemoteConfig, the zero one when none.
func (d disk) status() (RemoteConfig, error) {
	data, err := fileutil.ReadFile(filepath.Join(d.dir, statusFile))
	if errors.Is(err, fs.ErrNotExist) {
		return RemoteConfig{}, nil
	}
	var rc RemoteConfig
	if err == nil {
		err = json.Unmarshal(data, &rc)
	}
	if err != nil {
		return RemoteConfig{}, fmt.Errorf("read remote config status: %w", err)
	}
	if rc.Status == StatusApplying {
		rc.Status = StatusFailed
		rc.Message = "receiptd stopped while applying it; it runs with the last good configuration"
		rc.AppliedAt = time.Time{}
	}
	return rc, nil
}

func (d disk) saveStatus(rc RemoteConfig) error {
	data, err := json.Marshal(rc)
	if err != nil {
		return fmt.Errorf("save remote config status: %w", err)
	}
	return d.write(statusFile, data)
}

// write replaces name in the directory durably (fileutil.WriteFileAtomic:
// a temporary file, fsynced, renamed over name, the directory fsynced). It
// is the one place this package writes a file.
func (d disk) write(name string, data []byte) error {
	if err := fileutil.MkdirSynced(d.dir); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	path := filepath.Join(d.dir, name)
	if err := fileutil.WriteFileAtomic(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
