package daemon

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHandoffKeepsConnectionsAcrossViews: a connection made while no view
// accepts waits for the next view; a closed view ends its Accept with
// net.ErrClosed and leaves the listener open.
func TestHandoffKeepsConnectionsAcrossViews(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := newHandoff(ln)
	defer func() { require.NoError(t, h.close()) }()

	first := h.view()
	echo := func(v net.Listener, msg string) {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer c.Close()
		_, err = c.Write([]byte(msg))
		require.NoError(t, err)
		s, err := v.Accept()
		require.NoError(t, err)
		defer s.Close()
		got := make([]byte, len(msg))
		_, err = io.ReadFull(s, got)
		require.NoError(t, err)
		require.Equal(t, msg, string(got))
	}
	echo(first, "one")

	ended := make(chan error, 1)
	go func() { _, err := first.Accept(); ended <- err }()
	time.Sleep(20 * time.Millisecond) // first is blocked in Accept
	require.NoError(t, first.Close())
	select {
	case err := <-ended:
		require.True(t, errors.Is(err, net.ErrClosed), "Accept after Close: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end Accept")
	}

	// Dialled between two views: it waits, and the next view takes it.
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("between"))
	require.NoError(t, err)
	second := h.view()
	s, err := second.Accept()
	require.NoError(t, err)
	got := make([]byte, len("between"))
	_, err = io.ReadFull(s, got)
	require.NoError(t, err)
	require.Equal(t, "between", string(got))
	require.NoError(t, s.Close())
	echo(second, "three")
}
