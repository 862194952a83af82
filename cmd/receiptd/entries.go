package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/queue"
)

func init() {
	commands["entries"] = command{summary: "list queue entries (through the running daemon)", run: runEntries}
}

// maxPage is the largest page the daemon serves.
const maxPage = 1000

// entryPage is one page of GET /receiptd/entries. Entries stay raw so an
// export writes them exactly as the daemon did.
type entryPage struct {
	Entries []json.RawMessage `json:"entries"`
	Next    string            `json:"next"`
}

// pager walks GET /receiptd/entries page by page.
type pager struct {
	c     *apiclient.Client
	state string
	limit int // per page
	after string
	done  bool
}

// next returns the following page's entries, each decoded and raw; nil at
// the end.
func (p *pager) next(ctx context.Context) ([]queue.Entry, []json.RawMessage, error) {
	if p.done {
		return nil, nil, nil
	}
	q := url.Values{"limit": {strconv.Itoa(p.limit)}}
	if p.state != "" {
		q.Set("state", p.state)
	}
	if p.after != "" {
		q.Set("after", p.after)
	}
	var page entryPage
	if err := p.c.GetJSON(ctx, "GET", "/receiptd/entries?"+q.Encode(), &page); err != nil {
		return nil, nil, err
	}
	entries := make([]queue.Entry, len(page.Entries))
	for i, raw := range page.Entries {
		if err := json.Unmarshal(raw, &entries[i]); err != nil {
			return nil, nil, fmt.Errorf("list entries: entry %d after %q: %w", i, p.after, err)
		}
	}
	if page.Next == "" || page.Next == p.after || len(page.Entries) == 0 {
		p.done = true // the last page (or a daemon that would loop)
	}
	p.after = page.Next
	return entries, page.Entries, nil
}

func runEntries(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "entries", "entries [-state S] [-limit N] [-after QUEUEID] [-json] [-addr URL] [-token T]")
	var df daemonFlags
	df.register(fs)
	state := fs.String("state", "", "only entries in this state ("+statesList()+")")
	limit := fs.Int("limit", 100, "at most this many entries")
	after := fs.String("after", "", "start after this queueId (the next page)")
	asJSON := fs.Bool("json", false, "print one JSON object a line instead of a table")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	if *state != "" && !slices.Contains(queue.AllStates, queue.State(*state)) {
		return usagef("-state %q: must be one of %s", *state, statesList())
	}
	if *limit < 1 {
		return usagef("-limit %d: must be at least 1", *limit)
	}
	c, err := df.client()
	if err != nil {
		return err
	}
	p := &pager{c: c, state: *state, limit: min(*limit, maxPage), after: *after}
	var shown []queue.Entry
	truncated := false
	for len(shown) < *limit {
		entries, raws, err := p.next(ctx)
		if err != nil {
			return err
		}
		if entries == nil {
			break
		}
		n := min(len(entries), *limit-len(shown))
		truncated = n < len(entries)
		shown = append(shown, entries[:n]...)
		if *asJSON {
			for _, raw := range raws[:n] {
				fmt.Fprintf(env.stdout, "%s\n", compact(raw))
			}
		}
	}
	if !*asJSON {
		printEntryTable(env, shown)
	}
	if len(shown) > 0 && (truncated || (len(shown) == *limit && !p.done)) {
		fmt.Fprintf(env.stderr, "more: receiptd entries -after %s\n", shown[len(shown)-1].QueueID)
	}
	return nil
}

func printEntryTable(env *cmdEnv, entries []queue.Entry) {
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE ID\tKIND\tSTATE\tACCEPTED\tATTEMPTS\tUPSTREAM ID\tMESSAGE")
	for _, e := range entries {
		r := csvRecord(e)
		msg := oneLine(r[9])
		if e.State == queue.StateHeld {
			msg = "answer lost: check with the tax service before retry -force; " + msg
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.QueueID, e.Kind, e.State,
			e.AcceptedAt.Local().Format(time.DateTime), r[10], orDash(r[7]), orDash(msg))
	}
	_ = tw.Flush()
}

func statesList() string {
	names := make([]string, len(queue.AllStates))
	for i, s := range queue.AllStates {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a message on one table row and bounded.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:80]) + "..."
	}
	return s
}
