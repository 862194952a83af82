//go:build !linux && !windows

package daemon

import (
	"errors"
	"io"
	"net"
	"os/exec"

	"github.com/receiptd/receiptd/internal/config"
)

// switchSupported: the switch to a new version is built on Linux and
// Windows only; elsewhere RequestSwitch refuses and `receiptd update
// apply` says so.
const switchSupported = false

// ErrSwitchUnsupported is the switch's refusal where it is not built.
var ErrSwitchUnsupported = errors.New("the switch to a new version is not built on this platform yet; install the release with the package manager")

func (s *Supervisor) spawn(string, []string, io.Writer) (*child, error) {
	return nil, ErrSwitchUnsupported
}

// takeBack: nothing was handed on where the switch is not built.
func (s *Supervisor) takeBack() error { return nil }

type inheritance struct {
	listeners []net.Listener
	held      [][]net.Conn
}

// inherit: no parent passes listeners where the switch is not built.
func inherit(config.Config) (*inheritance, error) { return nil, nil }

// startChild refuses where the switch is not built (RunInstalled).
func startChild(*exec.Cmd) (*child, error) { return nil, ErrSwitchUnsupported }
