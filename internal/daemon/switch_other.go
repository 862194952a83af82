//go:build !linux

package daemon

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/receiptd/receiptd/internal/config"
)

// switchSupported: the switch to a new version is built on Linux only;
// elsewhere RequestSwitch refuses and `receiptd update apply` says so.
const switchSupported = false

// ErrSwitchUnsupported is the switch's refusal where it is not built.
var ErrSwitchUnsupported = errors.New("the switch to a new version is not built on this platform yet; install the release with the package manager")

func (s *Supervisor) spawn(string, []string) (*child, error) { return nil, ErrSwitchUnsupported }

type inheritance struct {
	listeners []net.Listener
	held      [][]net.Conn
}

// inherit: no parent passes listeners where the switch is not built.
func inherit(config.Config) (*inheritance, error) { return nil, nil }

// RunInstalled refuses where the switch is not built.
func RunInstalled(context.Context, string, []string, time.Duration) error {
	return ErrSwitchUnsupported
}
