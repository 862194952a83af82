package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"go.uber.org/zap"
	"golang.org/x/sys/windows"

	"github.com/receiptd/receiptd/internal/api"
	"github.com/receiptd/receiptd/internal/config"
)

// switchSupported: Windows closes the listeners here and the new version
// binds them again (envListenAddrs); the child dies with the parent
// through a Job Object.
const switchSupported = true

// rebindWait bounds how long a bind refused as in use is retried: the
// process that held the address may be ending.
const rebindWait = 5 * time.Second

// spawn stops accepting here, closes the listeners (Windows cannot hand a
// listening socket to a child through CreateProcess) and starts the
// release at path as a child that binds the same addresses again, on
// probation. Connections accepted and not yet served are closed: the POS
// retries them, as it does one refused until the child has bound. On an
// error the listeners may be closed: takeBack binds them again.
func (s *Supervisor) spawn(path string, args []string, out io.Writer) (*child, error) {
	var addrs []string
	for _, h := range s.handoffs {
		held, err := h.suspend()
		for _, c := range held {
			_ = c.Close()
		}
		if err != nil {
			return nil, err
		}
		if err := h.listener().Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return nil, fmt.Errorf("close listener %s for the new version: %w", h.addr, err)
		}
		addrs = append(addrs, h.addr.Network()+"="+h.addr.String())
	}
	return startChild(childCommand(path, args, childEnv(EnvChild+"=1", EnvProbation+"=1",
		envListenAddrs+"="+strings.Join(addrs, "|")), out))
}

// takeBack binds the listeners spawn closed again, now that the child
// has ended (its sockets go with it; a bind refused as in use meanwhile
// is retried for rebindWait), and accepts on them here.
func (s *Supervisor) takeBack() error {
	for _, h := range s.handoffs {
		if !h.suspendedNow() {
			continue
		}
		if err := h.listener().Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.log.Warn("close listener", zap.Stringer("addr", h.addr), zap.Error(err))
		}
		ln, err := listenAgain(h.addr.Network(), h.addr.String())
		if err != nil {
			return err
		}
		h.rebind(ln)
	}
	return nil
}

// suspendedNow reports whether suspend has ended the accept loop and no
// resume has started another.
func (h *handoff) suspendedNow() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.suspended
}

// rebind gives a suspended handoff ln, bound again on h.addr after its
// own listener was closed (a switch on Windows), and resumes it.
func (h *handoff) rebind(ln net.Listener) {
	h.mu.Lock()
	h.ln = ln
	h.mu.Unlock()
	h.resume(nil)
}

// listenAgain binds address as the Daemon does, retrying for rebindWait
// while it is refused as in use.
func listenAgain(network, address string) (net.Listener, error) {
	deadline := time.Now().Add(rebindWait)
	for {
		var ln net.Listener
		var err error
		switch network {
		case "tcp":
			ln, err = net.Listen("tcp", address)
		case "unix":
			ln, err = api.ListenUnix(address)
		default:
			return nil, fmt.Errorf("listen again on %s: unknown network %q", address, network)
		}
		inUse := errors.Is(err, windows.WSAEADDRINUSE) || errors.Is(err, api.ErrSocketInUse)
		if err == nil || !inUse || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("listen again on %s: %w", address, err)
			}
			return ln, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inheritance is what a parent passed at a switch: on Windows, the
// listeners bound again here on the addresses it closed (never any
// connection).
type inheritance struct {
	listeners []net.Listener
	held      [][]net.Conn
}

var (
	inheritOnce sync.Once
	inherited   *inheritance
	inheritErr  error
)

// inherit binds, once per process, the addresses a parent closed for
// this process (envListenAddrs); nil when it names none. They must be
// the ones cfg binds.
func inherit(cfg config.Config) (*inheritance, error) {
	inheritOnce.Do(func() { inherited, inheritErr = bindInherited(os.Getenv(envListenAddrs)) })
	if inheritErr != nil || inherited == nil {
		return nil, inheritErr
	}
	if err := matchListeners(cfg, inherited.listeners); err != nil {
		return nil, err
	}
	return inherited, nil
}

func bindInherited(addrs string) (*inheritance, error) {
	if addrs == "" {
		return nil, nil
	}
	_ = os.Unsetenv(envListenAddrs)
	in := &inheritance{}
	for _, a := range strings.Split(addrs, "|") {
		network, address, _ := strings.Cut(a, "=")
		ln, err := listenAgain(network, address)
		if err != nil {
			for _, l := range in.listeners {
				_ = l.Close()
			}
			return nil, err
		}
		in.listeners = append(in.listeners, ln)
	}
	in.held = make([][]net.Conn, len(in.listeners))
	return in, nil
}

// startChild starts cmd without a console, its standard input a pipe
// whose end asks it to stop (WithParent), in a Job Object that kills it
// when the job's last handle closes: this process's, when it ends, even
// by TerminateProcess. It starts suspended and runs only once it is in
// the job, so nothing it starts escapes it.
func startChild(cmd *exec.Cmd) (*child, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NO_WINDOW | windows.CREATE_SUSPENDED}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	job, err := jobFor(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	return startedChild(cmd, stdin.Close, func() { _ = windows.CloseHandle(job) }), nil
}

var ntResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// jobFor puts the suspended process pid in a new Job Object with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, then lets it run. The handle
// returned is the job's only one: not inherited by the child (os/exec
// passes only its standard handles), closed once the child has ended.
func jobFor(pid int) (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, fmt.Errorf("create a job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return 0, fmt.Errorf("set the job to kill on close: %w", err)
	}
	p, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(pid))
	if err != nil {
		_ = windows.CloseHandle(job)
		return 0, fmt.Errorf("open the new process: %w", err)
	}
	defer func() { _ = windows.CloseHandle(p) }()
	if err := windows.AssignProcessToJobObject(job, p); err != nil {
		_ = windows.CloseHandle(job)
		return 0, fmt.Errorf("put the new process in a job object: %w", err)
	}
	if st, _, _ := ntResumeProcess.Call(uintptr(p)); st != 0 {
		_ = windows.CloseHandle(job)
		return 0, fmt.Errorf("resume the new process: NTSTATUS %#x", st)
	}
	return job, nil
}

// WithParent is ctx, ended also, in a child (IsChild), when its standard
// input ends: the parent closed it to ask it to stop as at a service
// stop, or the parent is gone. Windows has no SIGTERM for a process
// without a console; off Windows the parent sends SIGTERM. The goroutine
// reading standard input lives as long as the process.
func WithParent(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if IsChild() {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	return ctx, cancel
}
