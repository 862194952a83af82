package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"
)

// maxAnswerHead bounds the status line and headers of an answer read on
// a predialed connection, as the transports' MaxResponseHeaderBytes does.
const maxAnswerHead = 1 << 20

// predialed returns the fresh connection a create or delete carries in
// ctx (WithPredial) for req, when it goes by plain HTTP straight to
// PosAPI; nil otherwise (the send transport carries it: TLS, a proxy,
// no predial, or one too old).
func (c *Client) predialed(ctx context.Context, op Op, req *http.Request) net.Conn {
	if op.Lookup() || op.method() == http.MethodGet || req.URL.Scheme != "http" || c.predialAddr == "" {
		return nil
	}
	p, _ := ctx.Value(predialKey{}).(*Predial)
	if p == nil {
		return nil
	}
	return p.take(ctx, c.predialAddr)
}

// roundTripOn writes req on conn, a connection dialed for it alone, and
// reads the answer's head, both on the calling goroutine. net/http's
// transport writes a request from a goroutine of its own and hands the
// answer back from another: on an online sale those two hand-offs cost
// about as much as the request itself (docs/performance.md). The wire is
// net/http's own (Request.Write, ReadResponse), with Connection: close
// as on the send transport's fresh connections; ctx's deadline and its
// end bound every read and write. The answer's Body reads from conn, and
// closing it closes conn; on an error conn is closed. tr says, as the
// transport's callbacks do, whether the request was written whole.
func roundTripOn(ctx context.Context, conn net.Conn, req *http.Request, tr *sendTrace) (*http.Response, error) {
	tr.gotConn.Store(true)
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = conn.Close()
		if cerr := ctx.Err(); cerr != nil {
			err = fmt.Errorf("%w (%v)", cerr, err)
		}
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return fail(err) // ended before anything was written: not sent
	}
	req.Close = true
	bw := bufio.NewWriterSize(conn, 4<<10)
	if err := req.Write(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	tr.wrote.Store(true)
	head := &io.LimitedReader{R: conn, N: maxAnswerHead}
	br := bufio.NewReaderSize(head, 4<<10)
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			if head.N <= 0 {
				err = fmt.Errorf("answer head larger than %d bytes: %w", maxAnswerHead, err)
			}
			return fail(err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer: the final one follows
		}
		head.N = math.MaxInt64 // the body: readBody bounds it
		resp.Body = &connBody{ReadCloser: resp.Body, conn: conn, stop: stop}
		return resp, nil
	}
}

// connBody is an answer's body read from a connection of its own.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
}

// Close closes the connection first: net/http's body would otherwise
// read what is left of an answer to its end (a chunked one, or one too
// large for MaxAnswer) until the deadline.
func (b *connBody) Close() error {
	b.stop()
	err := b.conn.Close()
	_ = b.ReadCloser.Close() // reads nothing more: the connection is closed
	return err
}
