// Command posclient is a small POS-side client of receiptd, written as the
// integration guide (docs/pos-integration.md) asks a POS to behave: it
// sends one receipt and acts on every answer receiptd can give. It is an
// example to copy from, kept to the standard library; CI runs it against
// the real daemon and the simulator (main_test.go).
//
//	posclient [-url http://127.0.0.1:7080] [-token T] [-wait 2m] receipt.json
//	posclient [-url ...] -answer Q000000000042
//
// It prints one line per event and ends with ISSUED, PAYMENT, REJECTED,
// STORED (receiptd has the sale; the e-barimt comes later) or FAILED.
// Exit status: 0 issued, 1 anything else, 2 usage.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout))
}

type pos struct {
	url, token string
	out        io.Writer
	until      time.Time // keep trying until then
}

// requestTimeout bounds one request: receiptd itself waits for the tax
// service at most accept.max_wait (60s by default).
const requestTimeout = 75 * time.Second

// answer is what a POS reads of receiptd's answers: PosAPI's envelopes
// (status SUCCESS/PAYMENT/ERROR) and receiptd's own {"queueId","state"}.
type answer struct {
	code    int
	retry   time.Duration
	queueID string
	Status  string `json:"status"`
	Message string `json:"message"`
	ID      string `json:"id"`
	Lottery string `json:"lottery"`
	QRData  string `json:"qrData"`
	State   string `json:"state"`
}

func run(ctx context.Context, args []string, out io.Writer) int {
	fs := flag.NewFlagSet("posclient", flag.ContinueOnError)
	fs.SetOutput(out)
	url := fs.String("url", "http://127.0.0.1:7080", "receiptd's address")
	token := fs.String("token", "", "auth.token, when receiptd has one")
	wait := fs.Duration("wait", 2*time.Minute, "how long to keep trying before leaving the sale to receiptd")
	late := fs.String("answer", "", "only fetch the late answer of this queueId")
	if err := fs.Parse(args); err != nil || (*late == "") == (fs.NArg() != 1) {
		fmt.Fprintln(out, "usage: posclient [-url U] [-token T] [-wait D] receipt.json | -answer QUEUEID")
		return 2
	}
	p := pos{url: *url, token: *token, out: out, until: time.Now().Add(*wait)}
	if *late != "" {
		return p.awaitLate(ctx, *late)
	}
	body, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(out, "FAILED", err)
		return 1
	}
	return p.sell(ctx, body)
}

// sell sends the receipt, and sends the same bytes again (never a new bill
// number) while receiptd answers 503 with Retry-After.
func (p pos) sell(ctx context.Context, body []byte) int {
	for {
		a, err := p.do(ctx, http.MethodPost, "/rest/receipt", body)
		if err != nil {
			// Unknown whether it was stored: the same body again is safe.
			fmt.Fprintln(p.out, "FAILED", err, "- send the same receipt again; never under a new bill number")
			return 1
		}
		switch {
		case a.code == http.StatusOK, a.code == http.StatusBadRequest, a.code == http.StatusConflict,
			a.code/100 == 4 && a.queueID != "" && a.Status == "ERROR": // the tax service's refusal, whatever its 4xx
			if a.Status == "ERROR" && a.code == http.StatusOK {
				a.code = http.StatusBadRequest
			}
			return p.final(a)
		case a.code == http.StatusAccepted:
			fmt.Fprintln(p.out, "QUEUED", a.queueID, "- print a provisional slip; the e-barimt follows")
			return p.awaitLate(ctx, a.queueID)
		case a.code == http.StatusServiceUnavailable:
			if a.queueID == "" {
				fmt.Fprintln(p.out, "FAILED not stored:", a.Message)
				return 1
			}
			fmt.Fprintln(p.out, "QUEUED", a.queueID, "- stored; asking again in", a.retry)
			if !p.sleep(ctx, a.retry) {
				fmt.Fprintln(p.out, "STORED", a.queueID, "- send the same receipt again later, or run posclient -answer", a.queueID)
				return 1
			}
		default: // 413, 415: a bug in the POS; 507: disk full, nothing stored
			fmt.Fprintln(p.out, "FAILED HTTP", a.code, a.Message)
			return 1
		}
	}
}

// awaitLate polls the late-answer route until the answer comes, is gone,
// or ctx ends.
func (p pos) awaitLate(ctx context.Context, queueID string) int {
	for {
		a, err := p.do(ctx, http.MethodGet, "/receiptd/entries/"+queueID+"/answer", nil)
		switch {
		case err != nil:
			fmt.Fprintln(p.out, "STORED", queueID, "- could not ask:", err)
			return 1
		case a.code == http.StatusOK:
			return p.final(a)
		case a.code == http.StatusAccepted:
			if p.sleep(ctx, a.retry) {
				continue
			}
			fmt.Fprintln(p.out, "STORED", queueID, "- no answer yet; ask later with posclient -answer", queueID)
		default: // 410: given once already, or lost; 404: unknown
			fmt.Fprintln(p.out, "STORED", queueID, "- HTTP", a.code, a.Message)
		}
		return 1
	}
}

// final prints the tax service's own answer.
func (p pos) final(a answer) int {
	switch {
	case a.Status == "SUCCESS":
		fmt.Fprintf(p.out, "ISSUED id=%s lottery=%s qrData=%s\n", a.ID, a.Lottery, a.QRData)
		return 0
	case a.Status == "PAYMENT":
		fmt.Fprintln(p.out, "PAYMENT id="+a.ID, "- payment not settled:", a.Message)
	case a.code == http.StatusConflict:
		fmt.Fprintln(p.out, "FAILED", a.Message, "- do not ring it again")
	default:
		fmt.Fprintln(p.out, "REJECTED", a.Message, "- correct the receipt and send it again")
	}
	return 1
}

func (p pos) do(ctx context.Context, method, path string, body []byte) (answer, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, p.url+path, bytes.NewReader(body))
	if err != nil {
		return answer{}, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.token != "" {
		req.Header.Set("Authorization", "Bearer "+p.token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	a := answer{code: res.StatusCode, queueID: res.Header.Get("X-Queue-Id"), retry: time.Second}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		a.retry = time.Duration(s) * time.Second
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&a); err != nil && !errors.Is(err, io.EOF) {
		return a, fmt.Errorf("%s %s: HTTP %d: %w", method, path, res.StatusCode, err)
	}
	return a, nil
}

// sleep waits d, unless that goes past p.until or ctx ends first.
func (p pos) sleep(ctx context.Context, d time.Duration) bool {
	if time.Now().Add(d).After(p.until) {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
