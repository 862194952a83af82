package daemon

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// helperEnv makes this test binary, started by the tests below, one of
// their processes instead of running tests (TestHelperProcess).
const helperEnv = "RECEIPTD_SWITCH_HELPER"

// helper is this test binary as the process role names.
func helper(role string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role, EnvChild+"=1")
	return cmd
}

// TestHelperProcess is the processes the tests start: "child" stops when
// WithParent's context ends (its standard input ended) and exits 0;
// "parent" starts a "sleeper" with startChild, writes its pid and waits
// to be killed; "sleeper" waits for an hour, ignoring its standard input.
func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		return
	case "child":
		ctx, cancel := WithParent(context.Background())
		defer cancel()
		<-ctx.Done()
		os.Exit(0)
	case "parent":
		cmd := helper("sleeper")
		ch, err := startChild(cmd)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		fmt.Println(ch.cmd.Process.Pid)
		time.Sleep(time.Hour)
	case "sleeper":
		time.Sleep(time.Hour)
	}
	os.Exit(4)
}

// TestChildStopsWhenItsStdinEnds: a child started by startChild is asked
// to stop by the end of its standard input (Windows has no SIGTERM for
// it) and exits 0 on its own, not killed after the grace.
func TestChildStopsWhenItsStdinEnds(t *testing.T) {
	ch, err := startChild(helper("child"))
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	select {
	case <-ch.exited:
		t.Fatalf("the child ended before it was asked to: %s", ch.describe())
	default:
	}
	require.NoError(t, ch.stop(30*time.Second), "exit 0: it stopped when asked, before the kill")
}

// TestChildDiesWithItsParent: TerminateProcess of a process that started
// a child with startChild ends the child too (the Job Object it put the
// child in closes with it), also when the parent is itself in a job
// (started by this test with startChild): jobs nest.
func TestChildDiesWithItsParent(t *testing.T) {
	cmd := helper("parent")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	parent, err := startChild(cmd)
	require.NoError(t, err)
	// A parent that never says the pid would hold the read forever.
	guard := time.AfterFunc(30*time.Second, func() { _ = parent.cmd.Process.Kill() })
	defer guard.Stop()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "the parent said %q", line)
	grandchild, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	require.NoError(t, err)
	defer func() { _ = windows.CloseHandle(grandchild) }()
	ev, err := windows.WaitForSingleObject(grandchild, 200)
	require.Equal(t, uint32(windows.WAIT_TIMEOUT), ev, "the child runs (%v)", err)

	require.NoError(t, parent.cmd.Process.Kill())
	<-parent.exited
	ev, err = windows.WaitForSingleObject(grandchild, 10_000)
	require.Equal(t, uint32(windows.WAIT_OBJECT_0), ev, "the child ended with its parent (%v)", err)
}

// TestTakeBackBindsTheAddressAgain: after a switch closed a handoff's
// listener, listenAgain binds the same address once whoever held it has
// let go (a bind refused as in use is retried), and the handoff, rebound,
// hands connections to a view again.
func TestTakeBackBindsTheAddressAgain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := newHandoff(ln)
	defer func() { require.NoError(t, h.close()) }()
	held, err := h.suspend()
	require.NoError(t, err)
	require.Empty(t, held)
	require.NoError(t, h.listener().Close())

	squatter, err := net.Listen("tcp", h.addr.String()) // the child, still ending
	require.NoError(t, err)
	go func() {
		time.Sleep(500 * time.Millisecond)
		_ = squatter.Close()
	}()
	again, err := listenAgain("tcp", h.addr.String())
	require.NoError(t, err, "bound once the address was let go")
	h.rebind(again)

	v := h.view()
	defer func() { _ = v.Close() }()
	dialed, err := net.Dial("tcp", h.addr.String())
	require.NoError(t, err)
	_, err = io.WriteString(dialed, "x")
	require.NoError(t, err)
	require.NoError(t, dialed.Close())
	guard := time.AfterFunc(30*time.Second, func() { _ = v.Close() }) // never an Accept forever
	defer guard.Stop()
	c, err := v.Accept()
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	b := make([]byte, 1)
	_, err = io.ReadFull(c, b)
	require.NoError(t, err)
	require.Equal(t, "x", string(b))
}
