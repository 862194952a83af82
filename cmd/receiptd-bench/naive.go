package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// naiveServer is the reference for accept: a durable server as simple as
// one can be. Every POST appends its body to one file and fdatasyncs it
// under a mutex, then answers 202. At 1 client its latency is the floor
// (an HTTP POST on loopback plus one fdatasync); at 64 clients its
// throughput is what a server without group commit reaches.
type naiveServer struct {
	mu  sync.Mutex
	f   *os.File
	srv *http.Server
	url string
}

var _ http.Handler = (*naiveServer)(nil)

func startNaive(dir string) (*naiveServer, error) {
	f, err := os.OpenFile(filepath.Join(dir, "naive.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("naive server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("naive server: %w", err)
	}
	n := &naiveServer{f: f, url: "http://" + ln.Addr().String()}
	n.srv = &http.Server{Handler: n, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = n.srv.Serve(ln) }()
	return n, nil
}

func (n *naiveServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := n.append(body); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"queued"}`)
}

func (n *naiveServer) append(body []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.f.Write(body); err != nil {
		return err
	}
	return fdatasync(n.f)
}

func (n *naiveServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(n.srv.Shutdown(ctx), n.f.Close())
}

// runNaive measures the naive server at 1 and 64 clients, d each.
func runNaive(ctx context.Context, dir string, d time.Duration) (one, many acceptResult, err error) {
	n, err := startNaive(dir)
	if err != nil {
		return one, many, err
	}
	defer func() { err = errors.Join(err, n.close()) }()
	c := newClient()
	for _, lv := range []struct {
		clients int
		out     *acceptResult
	}{{1, &one}, {64, &many}} {
		if _, err := measureAccept(ctx, c, n.url, lv.clients, d/10, fmt.Sprintf("nwarm%d", lv.clients)); err != nil {
			return one, many, err
		}
		if *lv.out, err = measureAccept(ctx, c, n.url, lv.clients, d, fmt.Sprintf("n%d", lv.clients)); err != nil {
			return one, many, err
		}
	}
	return one, many, nil
}
