package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/receiptd/receiptd/internal/config"
)

// readyPoll is how often WaitReady asks /readyz; it bounds the error of a
// measured time to ready.
const readyPoll = 2 * time.Millisecond

// Process is one running `receiptd run`. Its methods are safe for concurrent
// use; Kill and Stop may be called more than once.
type Process struct {
	// PID is the operating system's process id.
	PID int
	// Started is when the process was started (just before exec).
	Started time.Time

	cfg     config.Config
	cfgPath string
	logPath string
	cmd     *exec.Cmd
	logFile *os.File
	done    chan struct{} // closed once the process has been waited for
	waitErr error         // set before done is closed
	killed  atomic.Bool   // Kill ended it: a later Stop has nothing to report
	client  *http.Client
}

// StartFile starts `bin run -config path`. The configuration is read with
// config.Load to learn the listen address, which must be a TCP address.
// Output goes to receiptd.log beside path. The process lives until Kill or
// Stop, or until ctx is done (then it is killed).
func StartFile(ctx context.Context, bin, path string) (*Process, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("start receiptd: %w", err)
	}
	if cfg.Listen == "" {
		return nil, fmt.Errorf("start receiptd: config %s has no TCP listen address", path)
	}
	logPath := filepath.Join(filepath.Dir(path), "receiptd.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("start receiptd: open log: %w", err)
	}
	cmd := exec.CommandContext(ctx, bin, "run", "-config", path)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	PrepareStop(cmd)
	p := &Process{cfg: cfg, cfgPath: path, logPath: logPath, cmd: cmd, logFile: logFile,
		done:   make(chan struct{}),
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start receiptd %s: %w", bin, err)
	}
	p.PID = cmd.Process.Pid
	go p.waitLoop()
	return p, nil
}

// waitLoop reaps the process; it ends when the process does, and Kill and
// Stop wait for it, so it never outlives its Process.
func (p *Process) waitLoop() {
	p.waitErr = p.cmd.Wait()
	_ = p.logFile.Close()
	close(p.done)
}

// URL is the base URL of the local API ("http://127.0.0.1:PORT").
func (p *Process) URL() string { return "http://" + p.cfg.Listen }

// Config is the configuration the process runs with.
func (p *Process) Config() config.Config { return p.cfg }

// ConfigPath is the config file the process was started with.
func (p *Process) ConfigPath() string { return p.cfgPath }

// LogPath is the file receiving the process's output.
func (p *Process) LogPath() string { return p.logPath }

// Done is closed when the process has ended and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL and waits for the process to end: a crash, as far as
// the daemon can tell. It returns nil once the process is gone.
func (p *Process) Kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.killed.Store(true)
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("kill receiptd %d: %w", p.PID, err)
	}
	<-p.done
	return nil
}

// Stop asks the process to stop (SIGTERM; on Windows a CTRL_BREAK_EVENT,
// which Go delivers as os.Interrupt) and waits for a clean exit (status 0). If ctx ends
// first the process is killed and the error wraps ErrUnclean; a non-zero exit
// also wraps ErrUnclean. A process that had already ended is nil if it
// exited with status 0 or Kill ended it, else ErrExited.
func (p *Process) Stop(ctx context.Context) error {
	select {
	case <-p.done:
		if p.waitErr == nil || p.killed.Load() {
			return nil
		}
		return p.exitedErr("stop")
	default:
	}
	if err := AskToStop(p.cmd.Process); err != nil {
		_ = p.Kill()
		return fmt.Errorf("stop receiptd %d: signal: %w", p.PID, err)
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		_ = p.Kill()
		return fmt.Errorf("stop receiptd %d: %w: still running at %w", p.PID, ErrUnclean, ctx.Err())
	}
	if p.waitErr != nil {
		return fmt.Errorf("stop receiptd %d: %w: %w; log: %s", p.PID, ErrUnclean, p.waitErr, p.LogTail(2000))
	}
	return nil
}

// WaitReady polls /readyz (with auth.token, when set) until it answers 200. It fails with ErrExited if
// the process ends first, and with ctx's error if ctx ends first.
func (p *Process) WaitReady(ctx context.Context) error {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		if p.ready(ctx) {
			return nil
		}
		select {
		case <-p.done:
			return p.exitedErr("wait for ready")
		case <-ctx.Done():
			return fmt.Errorf("wait for receiptd %d to be ready: %w", p.PID, ctx.Err())
		case <-t.C:
		}
	}
}

func (p *Process) ready(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/readyz", nil)
	if err != nil {
		return false
	}
	if p.cfg.Auth.Token.IsSet() {
		req.Header.Set("Authorization", "Bearer "+p.cfg.Auth.Token.Reveal())
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func (p *Process) exitedErr(op string) error {
	<-p.done
	return fmt.Errorf("%s: receiptd %d: %w (%v); log: %s", op, p.PID, ErrExited, p.waitErr, p.LogTail(2000))
}

// LogTail returns up to the last n bytes of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}
