package daemon

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"

	"github.com/receiptd/receiptd/internal/config"
)

// switchSupported: Linux passes the listeners to the new version and
// kills it with the parent (Pdeathsig).
const switchSupported = true

// filer is a listener or a connection whose descriptor can be passed on.
type filer interface {
	File() (*os.File, error)
}

// spawn stops accepting here and starts the release at path as a child
// that serves the listeners (files 3, 4, ... and the connections
// accepted and not yet served after them), on probation. On an error
// nothing was started and the listeners accept here again.
func (s *Supervisor) spawn(path string, args []string, out io.Writer) (*child, error) {
	held := make([][]net.Conn, len(s.handoffs))
	resume := func() {
		for i, h := range s.handoffs {
			h.resume(held[i])
			held[i] = nil
		}
	}
	var names, heldIdx []string
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for i, h := range s.handoffs {
		conns, err := h.suspend()
		held[i] = conns
		if err != nil {
			resume()
			return nil, err
		}
		f, err := h.listener().(filer).File()
		if err != nil {
			resume()
			return nil, fmt.Errorf("pass listener %s: %w", h.addr, err)
		}
		names = append(names, h.addr.Network())
		files = append(files, f)
	}
	for i := range held {
		for _, c := range held[i] {
			fc, ok := c.(filer)
			if !ok {
				continue
			}
			f, err := fc.File()
			if err != nil {
				continue // the connection is closed below: the POS retries
			}
			files = append(files, f)
			heldIdx = append(heldIdx, strconv.Itoa(i))
		}
	}
	cmd := childCommand(path, args, childEnv(EnvChild+"=1", EnvProbation+"=1",
		envListenFDs+"="+strings.Join(names, ","), envHeldFDs+"="+strings.Join(heldIdx, ",")), out)
	cmd.ExtraFiles = files
	// Should this process die, even by kill -9, the child dies with it:
	// no child holds the database while a restarted receiptd opens it.
	ch, err := startChild(cmd)
	if err != nil {
		resume()
		return nil, err
	}
	for i := range held {
		for _, c := range held[i] {
			_ = c.Close() // the child holds its own copy
		}
	}
	// exec made the passed descriptors blocking (os.File.Fd), and a dup
	// shares that flag with the listener here: made blocking, an Accept
	// after a rollback could not be interrupted, nor the listener closed.
	for _, h := range s.handoffs {
		if err := setNonblock(h.listener()); err != nil {
			s.log.Warn("listener left blocking", zap.Stringer("addr", h.addr), zap.Error(err))
		}
	}
	return ch, nil
}

// takeBack makes the listeners accept here again after a switch that
// did not pass: the child has ended, they were never closed here.
func (s *Supervisor) takeBack() error {
	for _, h := range s.handoffs {
		h.resume(nil)
	}
	return nil
}

// setNonblock puts ln's descriptor back in the non-blocking mode Go's
// poller needs.
func setNonblock(ln net.Listener) error {
	sc, ok := ln.(syscall.Conn)
	if !ok {
		return fmt.Errorf("%T has no descriptor", ln)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), true) }); err != nil {
		return err
	}
	return serr
}

// inheritance is what a parent passed at a switch: the listeners, in the
// order the Daemon binds them, and the connections it had accepted.
type inheritance struct {
	listeners []net.Listener
	held      [][]net.Conn
}

var (
	inheritOnce sync.Once
	inherited   *inheritance
	inheritErr  error
)

// inherit reads the listeners a parent passed (envListenFDs), once per
// process; nil when none were. They must be the ones cfg binds.
func inherit(cfg config.Config) (*inheritance, error) {
	inheritOnce.Do(func() { inherited, inheritErr = readInheritance() })
	if inheritErr != nil || inherited == nil {
		return nil, inheritErr
	}
	if err := matchListeners(cfg, inherited.listeners); err != nil {
		return nil, err
	}
	return inherited, nil
}

func readInheritance() (*inheritance, error) {
	names := os.Getenv(envListenFDs)
	if names == "" {
		return nil, nil
	}
	heldIdx := os.Getenv(envHeldFDs)
	_ = os.Unsetenv(envListenFDs)
	_ = os.Unsetenv(envHeldFDs)
	in := &inheritance{}
	fd := uintptr(3)
	for _, name := range strings.Split(names, ",") {
		f := os.NewFile(fd, "listener-"+name)
		fd++
		ln, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("take the listener passed as file %d: %w", fd-1, err)
		}
		in.listeners = append(in.listeners, ln)
	}
	in.held = make([][]net.Conn, len(in.listeners))
	if heldIdx == "" {
		return in, nil
	}
	for _, s := range strings.Split(heldIdx, ",") {
		i, err := strconv.Atoi(s)
		f := os.NewFile(fd, "conn")
		fd++
		if err != nil || i < 0 || i >= len(in.listeners) {
			_ = f.Close()
			continue
		}
		c, err := net.FileConn(f)
		_ = f.Close()
		if err != nil {
			continue
		}
		in.held[i] = append(in.held[i], c)
	}
	return in, nil
}

// startChild starts cmd so that it dies with this process, even by
// kill -9 (Pdeathsig; the caller holds its thread, see switchRelease),
// and is asked to stop by SIGTERM.
func startChild(cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return startedChild(cmd, func() error { return cmd.Process.Signal(syscall.SIGTERM) }, nil), nil
}
