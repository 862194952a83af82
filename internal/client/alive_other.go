//go:build !linux

package client

import "net"

// reuseSupported is false here: without a look at the socket that cannot
// block (alive on Linux), every create goes on a connection of its own.
const reuseSupported = false

func alive(net.Conn) bool { return false }
