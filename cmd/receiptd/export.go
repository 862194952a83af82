package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/apiclient"
	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/queue"
)

func init() {
	commands["export"] = command{summary: "export entries accepted in a date range as jsonl or csv", run: runExport}
}

// csvHeader names the csv columns. lottery and qrData are not among them:
// receiptd never stores them.
var csvHeader = []string{"queueId", "kind", "state", "acceptedAt", "merchantTin", "posNo",
	"billIdSuffix", "upstreamId", "date", "message", "attempts"}

// errBadDate: a -from or -to that is neither a date nor an RFC 3339 time.
var errBadDate = errors.New("want YYYY-MM-DD or an RFC 3339 time like 2026-01-31T18:00:00+08:00")

func runExport(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlagSet(env, "export", "export -from DATE -to DATE [-format jsonl|csv] [-addr URL] [-token T]")
	var df daemonFlags
	df.register(fs)
	fromS := fs.String("from", "", "first day (YYYY-MM-DD, in the tax day's zone) or RFC 3339 time; required")
	toS := fs.String("to", "", "last day, included (YYYY-MM-DD) or RFC 3339 time; required")
	format := fs.String("format", "jsonl", "jsonl (entries as the daemon shows them) or csv")
	tz := fs.String("timezone", "", "IANA zone of a YYYY-MM-DD day (default: accept.timezone from the config)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	loc, err := exportZone(*tz, df.config)
	if err != nil {
		return err
	}
	from, to, err := exportRange(*fromS, *toS, loc)
	if err != nil {
		return err
	}
	if *format != "jsonl" && *format != "csv" {
		return usagef("-format %q: want jsonl or csv", *format)
	}
	c, err := df.client()
	if err != nil {
		return err
	}
	n, err := export(ctx, c, env.stdout, *format, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stderr, "exported %d entries accepted from %s to %s (days in %s)\n", n,
		from.In(loc).Format(time.RFC3339), to.In(loc).Format(time.RFC3339), loc)
	return nil
}

// exportZone is the zone of a date-only -from/-to: the tax day's, which
// is accept.timezone (the daemon's idempotency day), not the machine's.
// -timezone overrides it; a config that cannot be read leaves the default
// accept.timezone, unless -config named it.
func exportZone(tz, cfgPath string) (*time.Location, error) {
	if tz != "" {
		loc, err := time.LoadLocation(tz)
		if err != nil {
			return nil, usagef("-timezone %q: not an IANA time zone like Asia/Ulaanbaatar", tz)
		}
		return loc, nil
	}
	acc := config.Default().Accept
	lc, err := loadConfig(cfgPath)
	switch {
	case err == nil:
		acc = lc.cfg.Accept
	case cfgPath != "":
		return nil, err
	}
	loc, err := acc.Location()
	if err != nil {
		return nil, usageError{err: err}
	}
	return loc, nil
}

// exportRange parses -from and -to into [from, to): a date-only -to means
// through the end of that day in loc.
func exportRange(fromS, toS string, loc *time.Location) (time.Time, time.Time, error) {
	if fromS == "" || toS == "" {
		return time.Time{}, time.Time{}, usagef("-from and -to are required")
	}
	from, _, err := parseDate(fromS, loc)
	if err != nil {
		return time.Time{}, time.Time{}, usagef("-from %q: %v", fromS, err)
	}
	to, dateOnly, err := parseDate(toS, loc)
	if err != nil {
		return time.Time{}, time.Time{}, usagef("-to %q: %v", toS, err)
	}
	if dateOnly {
		to = to.AddDate(0, 0, 1)
	} else {
		to = to.Add(time.Nanosecond) // an explicit time is included
	}
	if !from.Before(to) {
		return time.Time{}, time.Time{}, usagef("-from %s is after -to %s", fromS, toS)
	}
	return from, to, nil
}

// parseDate reads YYYY-MM-DD (midnight in loc) or an RFC 3339 time.
func parseDate(s string, loc *time.Location) (t time.Time, dateOnly bool, err error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		return t, true, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	return time.Time{}, false, errBadDate
}

// export pages through every entry and writes those accepted in [from, to)
// to w; it returns how many it wrote.
func export(ctx context.Context, c *apiclient.Client, w io.Writer, format string, from, to time.Time) (int, error) {
	bw := bufio.NewWriter(w)
	var cw *csv.Writer
	if format == "csv" {
		cw = csv.NewWriter(bw)
		if err := cw.Write(csvHeader); err != nil {
			return 0, fmt.Errorf("export: %w", err)
		}
	}
	p := &pager{c: c, limit: maxPage}
	n := 0
	for {
		entries, raws, err := p.next(ctx)
		if err != nil {
			return n, err
		}
		if entries == nil {
			break
		}
		for i, e := range entries {
			if e.AcceptedAt.Before(from) || !e.AcceptedAt.Before(to) {
				continue
			}
			if cw != nil {
				err = cw.Write(csvRecord(e))
			} else {
				_, err = fmt.Fprintf(bw, "%s\n", compact(raws[i]))
			}
			if err != nil {
				return n, fmt.Errorf("export: %w", err)
			}
			n++
		}
	}
	if cw != nil {
		if cw.Flush(); cw.Error() != nil {
			return n, fmt.Errorf("export: %w", cw.Error())
		}
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	return n, nil
}

// csvRecord is one entry's row, in csvHeader's order. A delete entry's
// upstream id and date are those it sends until it has an outcome.
func csvRecord(e queue.Entry) []string {
	var upID, date, msg string
	if e.Kind == queue.KindDelete {
		upID, date = e.DeleteID, e.DeleteDate
	}
	if o := e.Outcome; o != nil {
		if o.ID != "" {
			upID = o.ID
		}
		if o.Date != "" {
			date = o.Date
		}
		msg = o.Message
	}
	if msg == "" && len(e.Attempts) > 0 && e.Outcome == nil {
		msg = e.Attempts[len(e.Attempts)-1].Error // why it is still waiting
	}
	return []string{e.QueueID, string(e.Kind), string(e.State), e.AcceptedAt.UTC().Format(time.RFC3339Nano),
		cell(e.MerchantTin), cell(e.PosNo), cell(e.BillIDSuffix), cell(upID), cell(date), cell(msg),
		strconv.Itoa(len(e.Attempts) + e.AttemptsDropped)}
}

// cell keeps a spreadsheet from reading text as a formula (OWASP CSV
// injection): a leading = + - @ tab or CR gets a quote mark in front.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// compact writes one JSON value on one line, exactly as the daemon wrote
// its numbers and strings.
func compact(raw json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw // already validated by the decoder; cannot happen
	}
	return b.Bytes()
}
