package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// naiveServer is the reference for accept: a durable server as simple as
// one can be. Every POST appends its body to one file and fdatasyncs it
// under a mutex, then answers 202. At 1 client its latency is the floor
// (an HTTP POST on loopback plus one fdatasync); at 64 clients its
// throughput is what a server without group commit reaches.
//
// Measured against receiptd it runs as its own process (startNaiveProcess),
// as receiptd does: in the client's process a request and its answer are
// handed between goroutines of one Go runtime, often on the same thread,
// while a request to another process wakes that process's thread and the
// answer wakes the client's, two wake-ups the in-process server never pays.
//
// With group set it is the group-commit reference instead: the same
// server, but concurrent POSTs share one fdatasync (the first caller to
// find none running writes every body waiting and flushes; the others
// wait for it), as receiptd's log does. It does nothing else (no parsing,
// no index, no database), so at 64 clients it is the most a durable HTTP
// server with group commit reaches on this machine with these clients:
// the ceiling against which receiptd's own work per receipt shows.
type naiveServer struct {
	f   *os.File
	srv *http.Server
	url string

	group bool // the group-commit reference
	// mu is held across the write and the fdatasync by the naive server,
	// and guards the fields below it in the group-commit reference.
	mu       sync.Mutex
	pending  [][]byte      // bodies not yet taken by a flush
	next     uint64        // number of the next body
	durable  uint64        // bodies up to this number are on disk
	flushing bool          // a caller is writing and flushing
	flushed  chan struct{} // closed and replaced after every flush
	failed   error         // a flush failed: every later append fails
}

var _ http.Handler = (*naiveServer)(nil)

func startNaive(dir string, group bool) (*naiveServer, error) {
	name := "naive.log"
	if group {
		name = "naive-group.log"
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("naive server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("naive server: %w", err)
	}
	n := &naiveServer{f: f, url: "http://" + ln.Addr().String(), group: group, flushed: make(chan struct{})}
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
	if n.group {
		return n.groupAppend(body)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.f.Write(body); err != nil {
		return err
	}
	return fdatasync(n.f)
}

// groupAppend returns once body is on disk, flushed by this caller or by
// the one whose flush took it.
func (n *naiveServer) groupAppend(body []byte) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.pending = append(n.pending, body)
	n.next++
	mine := n.next
	for n.durable < mine {
		if n.failed != nil {
			return n.failed
		}
		if n.flushing {
			ch := n.flushed
			n.mu.Unlock()
			<-ch
			n.mu.Lock()
			continue
		}
		n.flushing = true
		work, last := n.pending, n.next
		n.pending = nil
		n.mu.Unlock()
		err := n.writeAll(work)
		n.mu.Lock()
		n.flushing = false
		close(n.flushed)
		n.flushed = make(chan struct{})
		if err != nil {
			n.failed = err // the waiters' bodies went with this flush
			return err
		}
		n.durable = last
	}
	return nil
}

func (n *naiveServer) writeAll(bodies [][]byte) error {
	for _, b := range bodies {
		if _, err := n.f.Write(b); err != nil {
			return err
		}
	}
	return fdatasync(n.f)
}

// naiveEnv names the scratch directory when this program is started as the
// naive server's process (serveNaiveProcess); naiveGroupEnv=1 makes it the
// group-commit reference.
const (
	naiveEnv      = "RECEIPTD_BENCH_NAIVE_DIR"
	naiveGroupEnv = "RECEIPTD_BENCH_NAIVE_GROUP"
)

// naiveProcess is the naive server in a process of its own: this program
// started again with naiveEnv set.
type naiveProcess struct {
	cmd *exec.Cmd
	url string
}

// startNaiveProcess starts the naive server (or with group the
// group-commit reference) as a process of its own, with GOMAXPROCS as
// receiptd's, and returns once it listens.
func startNaiveProcess(ctx context.Context, dir string, group bool) (*naiveProcess, error) {
	env := []string{naiveEnv + "=" + dir}
	if group {
		env = append(env, naiveGroupEnv+"=1")
	}
	return startHelperProcess(ctx, "naive server", env)
}

// startHelperProcess starts this program again with env added, as one of
// the servers it measures against (the naive server, the forwarding
// reference, the simulator: online.go), and returns once the process has
// printed the URL it listens on. The process ends at an interrupt, or
// when its standard input ends (this process went away).
func startHelperProcess(ctx context.Context, what string, env []string) (*naiveProcess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	_ = stdin // closed by Wait after the process exits; the process ends when it reads EOF
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u, ok := <-line:
		if ok && strings.HasPrefix(u, "http://") {
			return &naiveProcess{cmd: cmd, url: u}, nil
		}
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, fmt.Errorf("%s: its process did not print its address", what)
}

func (p *naiveProcess) close() error {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		_ = p.cmd.Process.Kill()
	}
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() { // ended by the signal
		return nil
	}
	return err
}

// serveNaiveProcess is this program's whole work when naiveEnv is set:
// serve the naive server, print its URL, and stop at an interrupt or when
// standard input ends (the parent went away).
func serveNaiveProcess(dir string) {
	n, err := startNaive(dir, os.Getenv(naiveGroupEnv) == "1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serveUntilParentGoes(n.url, n.close)
}

// serveUntilParentGoes prints url, waits for an interrupt or the end of
// standard input, closes and exits.
func serveUntilParentGoes(url string, closeFn func() error) {
	fmt.Println(url)
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	<-ctx.Done()
	if err := closeFn(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func (n *naiveServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(n.srv.Shutdown(ctx), n.f.Close())
}
