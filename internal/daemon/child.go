package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"
)

// child is a receiptd process this one started: a release on probation,
// or the installed version (RunInstalled). startChild (per platform)
// makes one.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed once Wait has returned
	err    error         // Wait's, set before exited is closed
	// askStop asks the child to shut down as at a service stop: SIGTERM
	// on Linux; on Windows, which has no signal for a child without a
	// console, the end of its standard input (WithParent).
	askStop func() error
}

// startedChild waits for cmd, started, in a goroutine that ends with
// it; afterExit, when not nil, runs once it has ended.
func startedChild(cmd *exec.Cmd, askStop func() error, afterExit func()) *child {
	ch := &child{cmd: cmd, exited: make(chan struct{}), askStop: askStop}
	go func() {
		defer close(ch.exited)
		ch.err = cmd.Wait()
		if afterExit != nil {
			afterExit()
		}
	}()
	return ch
}

// describe says how the child ended, once it has.
func (ch *child) describe() string {
	<-ch.exited
	if ch.err == nil {
		return "exit status 0"
	}
	return ch.err.Error()
}

// stop asks the child to shut down as at a service stop (askStop: its
// requests answered, its database closed), kills it after grace and a
// margin, and returns how it ended.
func (ch *child) stop(grace time.Duration) error {
	select {
	case <-ch.exited:
		return ch.exitError()
	default:
	}
	_ = ch.askStop()
	t := time.NewTimer(grace + 5*time.Second)
	defer t.Stop()
	select {
	case <-ch.exited:
	case <-t.C:
		_ = ch.cmd.Process.Kill()
		<-ch.exited
	}
	return ch.exitError()
}

// ChildExitError is a child receiptd's end, which its parent's `run`
// exits with: Code is its exit code.
type ChildExitError struct {
	Code int
	Err  error
}

func (e *ChildExitError) Error() string { return fmt.Sprintf("the running version ended: %v", e.Err) }
func (e *ChildExitError) Unwrap() error { return e.Err }

// exitError is nil when the child exited 0, else a ChildExitError.
func (ch *child) exitError() error {
	<-ch.exited
	if ch.err == nil {
		return nil
	}
	code := 1
	var ee *exec.ExitError
	if errors.As(ch.err, &ee) && ee.ExitCode() > 0 {
		code = ee.ExitCode()
	}
	return &ChildExitError{Code: code, Err: ch.err}
}

// childCommand is path with args and env, its standard output and error
// going to out (told so: LogsToParent), or to this process's when out is
// nil.
func childCommand(path string, args, env []string, out io.Writer) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr, cmd.Env = os.Stdout, os.Stderr, env
	if out != nil {
		cmd.Stdout, cmd.Stderr, cmd.Env = out, out, append(env, envLogToParent+"=1")
	}
	return cmd
}

// RunInstalled runs the installed version at path as this process's
// child until ctx ends (then the child is stopped as at shutdown, within
// grace and a margin), or until the child exits: its exit is Run's error
// (a *ChildExitError carries its code). This process stays, thin: should
// it be killed, even by kill -9 or TerminateProcess, the child dies too
// (startChild: Pdeathsig on Linux, a Job Object on Windows). out is as
// Updates.Output.
func RunInstalled(ctx context.Context, path string, args []string, grace time.Duration, out io.Writer) error {
	runtime.LockOSThread() // as in switchRelease: Pdeathsig follows the thread
	defer runtime.UnlockOSThread()
	ch, err := startChild(childCommand(path, args, childEnv(EnvChild+"=1"), out))
	if err != nil {
		return fmt.Errorf("start the installed version %s: %w", path, err)
	}
	select {
	case <-ch.exited:
		return ch.exitError()
	case <-ctx.Done():
		return ch.stop(grace)
	}
}
