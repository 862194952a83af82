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

// predialed returns the connection a create or delete carries in ctx
// (WithPredial) for req, when it goes by plain HTTP straight to PosAPI;
// nil otherwise (the send transport carries it: TLS, a proxy, no predial,
// or one too old or closed).
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

// roundTripOn writes req on conn, a predialed or kept connection, and
// reads the answer's head, both on the calling goroutine. net/http's
// transport writes a request from a goroutine of its own and hands the
// answer back from another: on an online sale those two hand-offs cost
// about as much as the request itself (docs/performance.md). The wire is
// net/http's own (Request.Write, ReadResponse); ctx's deadline and its
// end bound every read and write. The answer's Body reads from conn;
// closing it gives conn to keep for the next create (Predial) when the
// answer was read to its end, did not say Connection: close and nothing
// followed it, and closes conn otherwise; on an error conn is closed. tr
// says, as the transport's callbacks do, whether the request was written
// whole.
func (c *Client) roundTripOn(ctx context.Context, conn net.Conn, req *http.Request, tr *sendTrace) (*http.Response, error) {
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
	req.Close = !reuseSupported // where connections are not kept, say so
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
		resp.Body = &connBody{ReadCloser: resp.Body, conn: conn, stop: stop, br: br, warm: &c.warm,
			keep: !resp.Close && resp.ProtoAtLeast(1, 1) && resp.StatusCode != http.StatusSwitchingProtocols}
		return resp, nil
	}
}

// connBody is an answer's body read from a connection of roundTripOn's.
type connBody struct {
	io.ReadCloser
	conn net.Conn
	stop func() bool
	br   *bufio.Reader
	keep bool // the answer allows the connection to carry another request
	eof  bool // the body was read to its end
	warm *warmPool
	done bool // closed: a second Close does nothing
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

// Close keeps the connection for the next create when the whole answer
// was read and nothing came after it, else closes it first: net/http's
// body would otherwise read what is left of an answer to its end (a
// chunked one, or one too large for MaxAnswer) until the deadline.
func (b *connBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	stopped := b.stop() // false: ctx ended, its deadline may be set
	if stopped && b.keep && b.eof && b.br.Buffered() == 0 && b.conn.SetDeadline(time.Time{}) == nil {
		_ = b.ReadCloser.Close()
		b.warm.put(b.conn)
		return nil
	}
	err := b.conn.Close()
	_ = b.ReadCloser.Close() // reads nothing more: the connection is closed
	return err
}
