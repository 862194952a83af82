package store

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// pageDamage is what bbolt says about a damaged page (an error of its
// consistency check, or the value it panics with while reading a page)
// and what that means, in an operator's words. The expression's first
// group is the page's number.
var pageDamage = []struct {
	re   *regexp.Regexp
	says string
}{
	{regexp.MustCompile(`Page expected to be: (\d+), but self identifies as (\d+)`),
		"it does not hold what the database's tree expects there (it was overwritten, zeroed or written elsewhere)"},
	{regexp.MustCompile(`page (\d+): has unexpected type/flags`), "its header is garbled (a type no page has)"},
	{regexp.MustCompile(`page (\d+): invalid type`), "its header is garbled (a type no page has)"},
	{regexp.MustCompile(`invalid page type: (\d+):`), "it is not the kind of page the database's tree expects there"},
	{regexp.MustCompile(`page (\d+): out of bounds`), "the database's tree points past the end of the file"},
	{regexp.MustCompile(`pg[iI]d \((\d+)\) above high water mark`), "the database's tree points past the end of the file"},
	{regexp.MustCompile(`page ID \((\d+)\) out of range`), "the database's tree points past the end of the file"},
	{regexp.MustCompile(`page (\d+): multiple references`), "the database's tree uses it twice"},
	{regexp.MustCompile(`page (\d+): reachable freed`), "it is in use and also listed as free"},
	{regexp.MustCompile(`page (\d+): already freed`), "it is listed as free twice"},
	{regexp.MustCompile(`page (\d+): unreachable unfreed`), "it is neither in use nor listed as free"},
	{regexp.MustCompile(`inode overflow: \d+ \(pgid=(\d+)\)`), "it holds more elements than a page can"},
}

// describeDamage turns what bbolt reported about a damaged file (its
// consistency check's errors, or a recovered panic value) into words: the
// first damaged page (the lowest it names) and what is wrong with it, and
// how many problems there were: found, of which problems are those kept.
// bbolt's own text is used only when it names no page, and never with its
// "panic:" or "assertion failed:".
func describeDamage(found int, problems ...any) string {
	first, says, known := uint64(0), "", false
	var other string
	for _, p := range problems {
		text := fmt.Sprint(p)
		matched := false
		for _, d := range pageDamage {
			m := d.re.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			matched = true
			if id, err := strconv.ParseUint(m[1], 10, 64); err == nil && (!known || id < first) {
				first, says, known = id, d.says, true
			}
			break
		}
		if !matched && other == "" {
			other = plainText(text)
		}
	}
	var out string
	switch {
	case known:
		out = fmt.Sprintf("the first damaged page is page %d: %s", first, says)
	case other != "":
		out = "a page could not be read: " + other
	default:
		out = "a page could not be read"
	}
	if found > 1 {
		out += fmt.Sprintf(" (%d problems found)", found)
	}
	return out
}

// plainText is bbolt's text without the words of a panic.
func plainText(s string) string {
	for _, p := range []string{"panic: ", "check fail: ", "assertion failed: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	if i := strings.Index(s, " (stack: "); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}
