package service

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/windows"

	"github.com/receiptd/receiptd/internal/config"
)

// restrictedSDDL is a protected DACL (no permissions inherited from the
// parent) giving full control to SYSTEM, which the service runs as, and
// to Administrators, inherited by every file and folder below. The
// database holds customer identifiers, and the config the API token.
const restrictedSDDL = "D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// prepareWindows creates the data directory and limits it to SYSTEM and
// Administrators (the MSI does the same with icacls), and the default log
// and config folders when they are used. An operator's own log or config
// folder is left as it is: it may hold other programs' files.
func prepareWindows(out io.Writer, lc Definition) error {
	dirs := []string{lc.Config.DataDir}
	if lc.Config.Log.File == "" {
		dirs = append(dirs, filepath.Join(programData(), "receiptd", "logs"))
	}
	if strings.EqualFold(filepath.Clean(lc.Path), filepath.Clean(config.DefaultPath())) {
		dirs = append(dirs, filepath.Dir(lc.Path))
	}
	for _, dir := range dirs {
		if err := restrictDir(dir); err != nil {
			return err
		}
		fmt.Fprintf(out, "limited %s to SYSTEM and Administrators\n", dir)
	}
	return nil
}

// restrictDir creates dir if needed and sets restrictedSDDL on it.
func restrictDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	sd, err := windows.SecurityDescriptorFromString(restrictedSDDL)
	if err != nil {
		return fmt.Errorf("restrict %s: %w", dir, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("restrict %s: %w", dir, err)
	}
	err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("restrict %s to SYSTEM and Administrators: %w", dir, err)
	}
	return nil
}
