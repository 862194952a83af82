package queue_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/store"
	"github.com/receiptd/receiptd/internal/store/storetest"
)

const (
	crashEnvDB    = "RECEIPTD_QUEUE_CRASH_DB"
	crashEnvRound = "RECEIPTD_QUEUE_CRASH_ROUND"
)

// TestCrashKill9LosesNoAcknowledgedReceipt runs TestCrashChild in a
// subprocess that enqueues from 8 goroutines (and drains with a worker),
// kills it at a random moment (SIGKILL; TerminateProcess on Windows), reopens the file, and checks that every
// id the child printed after Enqueue returned is there, the file passes
// bbolt's check, and the counters agree with the state index.
func TestCrashKill9LosesNoAcknowledgedReceipt(t *testing.T) {
	t.Parallel()
	rounds := 20
	if n, err := strconv.Atoi(os.Getenv("RECEIPTD_CRASH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	path := filepath.Join(t.TempDir(), "receiptd.db")
	acked := map[string]string{} // queueId → idempotency key
	for round := range rounds {
		lines := runAndKill(t, path, round, time.Duration(rand.IntN(150))*time.Millisecond)
		for _, l := range lines {
			f := strings.Fields(l)
			require.Len(t, f, 3, "line %q", l)
			acked[f[1]] = f[2]
		}
		verifyAfterCrash(t, path, acked)
		t.Logf("round %d of %d: killed, reopened, %d acknowledged receipts present", round+1, rounds, len(acked))
	}
	t.Logf("%d rounds, %d acknowledged receipts, all present", rounds, len(acked))
}

func runAndKill(t *testing.T, path string, round int, after time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnvDB+"="+path, crashEnvRound+"="+strconv.Itoa(round))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var (
		lines   []string
		mu      sync.Mutex
		started = make(chan struct{})
		once    sync.Once
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return // a line without its newline was not fully acknowledged
			}
			if strings.HasPrefix(l, "ACK ") {
				mu.Lock()
				lines = append(lines, strings.TrimSpace(l))
				mu.Unlock()
				once.Do(func() { close(started) })
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("child acknowledged nothing")
	}
	time.Sleep(after)
	// SIGKILL on Unix, TerminateProcess on Windows: no chance to clean up.
	require.NoError(t, cmd.Process.Kill())
	<-done
	_ = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return lines
}

func verifyAfterCrash(t *testing.T, path string, acked map[string]string) {
	t.Helper()
	st, err := store.Open(path, store.Options{}) // runs the full check
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	q, err := queue.Open(ctx, st, crashOptions(path))
	require.NoError(t, err)
	defer func() { require.NoError(t, q.Close(ctx)) }()
	for id, key := range acked {
		e, err := q.Get(id)
		require.NoError(t, err, "acknowledged %s lost", id)
		require.Equal(t, key, e.IdemKey)
	}
	c := counts(t, q)
	require.Zero(t, c[queue.StateSending], "recovery moved every sending entry")
	for _, s := range queue.AllStates {
		n, after := 0, ""
		for {
			page, next, err := q.List(queue.ListOptions{State: s, Limit: 1000, After: after})
			require.NoError(t, err)
			n += len(page)
			if next == "" {
				break
			}
			after = next
		}
		require.Equal(t, c[s], n, "counter for %s agrees with the state index", s)
	}
	require.NoError(t, queue.CheckIndexes(st), "every index agrees with the entries after recovery")
}

// crashOptions opens the crash test's queue with its write-ahead log
// beside the file (withLog), so a kill lands in log flushes, in the
// batches that apply them, and in replays at the next open.
func crashOptions(path string) queue.Options {
	if !withLog {
		return queue.Options{}
	}
	return queue.Options{LogDir: path + ".wal", LogSegmentSize: 256 << 10}
}

func TestCrashChild(t *testing.T) {
	path := storetest.ChildValue(t, crashEnvDB)
	round := os.Getenv(crashEnvRound)
	st, err := store.Open(path, store.Options{SkipCheckOnOpen: true})
	require.NoError(t, err)
	q, err := queue.Open(ctx, st, crashOptions(path))
	require.NoError(t, err)
	go func() { _ = q.ApplyLoop(ctx) }() // as the daemon runs it; the kill ends it
	var (
		n   atomic.Int64
		out sync.Mutex
		w   = bufio.NewWriter(os.Stdout)
	)
	for range 8 {
		go func() {
			for {
				i := n.Add(1)
				key := fmt.Sprintf("r%s-%d", round, i)
				e, _, err := q.Enqueue(ctx, queue.NewReceipt{IdemKey: key, BodyHash: "h" + key,
					Body: []byte(`{"billIdSuffix":"` + key + `","totalAmount":12.50}`), Now: time.Now()})
				if err != nil {
					panic(err)
				}
				out.Lock()
				fmt.Fprintf(w, "ACK %s %s\n", e.QueueID, key)
				_ = w.Flush()
				out.Unlock()
			}
		}()
	}
	go func() { // a worker, so kills also land mid-claim and mid-finish
		for {
			got, err := q.Claim(ctx, 4, time.Now())
			if err != nil {
				panic(err)
			}
			for _, e := range got {
				if _, err := q.Finish(ctx, queue.Finishing{QueueID: e.QueueID, Attempt: queue.Attempt{At: time.Now(), Result: queue.ResultSuccess}, Next: queue.StateSent, Outcome: &queue.Outcome{Status: "SUCCESS", ID: "U" + e.QueueID}, NextAttemptAt: time.Time{}}); err != nil {
					panic(err)
				}
			}
		}
	}()
	time.Sleep(20 * time.Second) // the parent kills us long before this
	t.Fatal("not killed")
}
