package client

import (
	"errors"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// reuseSupported: a kept connection can be checked before a create is
// written on it (alive).
const reuseSupported = true

// alive reports whether conn, idle since its last answer, is still open
// with nothing to read: a look at its socket without reading (recv with
// MSG_PEEK and MSG_DONTWAIT) that says "would block". A server that has
// closed it (end of file), reset it, or sent bytes nobody asked for makes
// it unusable.
func alive(conn net.Conn) bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var (
		n     int
		rerr  error
		probe [1]byte
	)
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr = unix.Recvfrom(int(fd), probe[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
		return true // never wait for the socket
	})
	return err == nil && n <= 0 && (errors.Is(rerr, unix.EAGAIN) || errors.Is(rerr, unix.EWOULDBLOCK))
}
