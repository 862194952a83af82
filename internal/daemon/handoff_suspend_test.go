package daemon

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHandoffSuspendHandsOnWhatItHeld: suspend stops accepting without
// closing the listener and returns the connection its loop had accepted
// for a view; a connection made while suspended waits in the backlog;
// after resume a view is given both, and the listener still closes.
// Suspending twice is refused; resuming twice starts one accept loop.
func TestHandoffSuspendHandsOnWhatItHeld(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := newHandoff(ln)

	dial := func(msg string) net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		_, err = c.Write([]byte(msg))
		require.NoError(t, err)
		return c
	}
	first := dial("one")
	defer first.Close()
	time.Sleep(200 * time.Millisecond) // the loop accepts it and waits for a view

	held, err := h.suspend()
	require.NoError(t, err)
	require.Len(t, held, 1, "the connection the loop held is handed on")
	second := dial("two")
	defer second.Close()

	h.resume(held)
	h.resume(nil) // a second resume starts no second accept loop
	held, err = h.suspend()
	require.NoError(t, err, "one loop to end")
	_, err = h.suspend()
	require.ErrorContains(t, err, "handed on already")
	h.resume(held)
	v := h.view()
	var got []string
	for range 2 {
		s, err := v.Accept()
		require.NoError(t, err)
		msg := make([]byte, 3)
		_, err = io.ReadFull(s, msg)
		require.NoError(t, err)
		got = append(got, string(msg))
		require.NoError(t, s.Close())
	}
	require.ElementsMatch(t, []string{"one", "two"}, got)
	require.NoError(t, v.Close())
	closed := make(chan error, 1)
	go func() { closed <- h.close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the listener does not close after a resume")
	}
}

// TestHandoffSuspendRefusesAListenerItCannotInterrupt: a listener without
// a deadline cannot be handed on; suspend says so.
func TestHandoffSuspendRefusesAListenerItCannotInterrupt(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := newHandoff(plainListener{ln})
	defer func() { _ = h.close() }()
	_, err = h.suspend()
	require.ErrorContains(t, err, "cannot be handed on")
}

type plainListener struct{ ln net.Listener }

func (p plainListener) Accept() (net.Conn, error) { return p.ln.Accept() }
func (p plainListener) Close() error              { return p.ln.Close() }
func (p plainListener) Addr() net.Addr            { return p.ln.Addr() }
