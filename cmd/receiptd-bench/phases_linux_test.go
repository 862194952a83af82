package main

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"runtime/trace"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestPhasesOfRecordedTrace records a real execution trace of a handler
// that reads a request from a loopback connection, appends it to a file,
// fdatasyncs it and writes the answer, three times, and reads the trace
// back: with the handler's functions as the log's, each syscall is found
// and each fdatasync is a receipt; with the floor's rules, which name
// receiptd's and the naive server's functions, there is none.
func TestPhasesOfRecordedTrace(t *testing.T) {
	// Not parallel: one execution trace a process.
	const receipts = 3
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	served := make(chan error, 1)
	var tr bytes.Buffer
	require.NoError(t, trace.Start(&tr))
	go func() { served <- phasesTestServe(ln, f, receipts) }()
	conn, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	answers := bufio.NewReader(conn)
	for range receipts {
		_, err := conn.Write([]byte("receipt\n"))
		require.NoError(t, err)
		answer, err := answers.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "202\n", answer)
	}
	require.NoError(t, <-served)
	trace.Stop()

	rules := floorRules // a test binary names package main by its path, not "main."
	rules.walSync = []string{".phasesTestSync"}
	rules.walWrite = []string{".phasesTestAppend"}
	p, err := readPhases(bytes.NewReader(tr.Bytes()), rules)
	require.NoError(t, err)
	require.Equal(t, receipts, p.receipts, "one log fdatasync a receipt")
	for _, k := range []string{phaseWALSync, phaseWALWrite, phaseAnswer, phaseRead} {
		require.Positive(t, p.phase[k], "%s in %v", k, p.phase)
	}
	require.Empty(t, p.dbSyncs)

	p, err = readPhases(bytes.NewReader(tr.Bytes()), floorRules)
	require.NoError(t, err)
	require.Zero(t, p.receipts, "the floor's rules name receiptd's log and the naive server, not this test's")
}

// phasesTestServe answers n requests on one connection, each appended to f
// and fdatasynced before its answer.
func phasesTestServe(ln net.Listener, f *os.File, n int) error {
	conn, err := ln.Accept()
	if err != nil {
		return err
	}
	defer conn.Close()
	in, out := bufio.NewReader(conn), bufio.NewWriter(conn)
	for range n {
		req, err := in.ReadBytes('\n')
		if err != nil {
			return err
		}
		if err := phasesTestAppend(f, req); err != nil {
			return err
		}
		if err := phasesTestSync(f); err != nil {
			return err
		}
		if _, err := out.WriteString("202\n"); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return nil
}

//go:noinline
func phasesTestAppend(f *os.File, b []byte) error {
	_, err := f.Write(b)
	return err
}

//go:noinline
func phasesTestSync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
