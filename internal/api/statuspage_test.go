package api_test

import (
	"html/template"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/queue"
	"github.com/receiptd/receiptd/internal/testing/testkit"
)

func TestStatusPageShowsQueueAndFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ok := e.do(http.MethodPost, "/rest/receipt", testkit.Receipt("page-ok"))
	require.Equal(t, http.StatusOK, ok.code, "%s", ok.body)
	// Totals that do not add up: the simulator rejects it with a message.
	bad := strings.Replace(testkit.Receipt("page-bad"), `"totalAmount":`, `"totalAmount":1,"x":`, 1)
	rej := e.do(http.MethodPost, "/rest/receipt", bad)
	require.Equal(t, http.StatusBadRequest, rej.code, "%s", rej.body)
	id := rej.h.Get("X-Queue-Id")
	require.NotEmpty(t, id)
	e.waitState(id, queue.StateRejected)
	message := e.entry(id)["outcome"].(map[string]any)["message"].(string)

	page := e.do(http.MethodGet, "/", "")
	require.Equal(t, http.StatusOK, page.code)
	require.Contains(t, page.h.Get("Content-Type"), "text/html")
	html := string(page.body)
	require.Contains(t, html, id, "the rejected entry is listed")
	require.Contains(t, html, template.HTMLEscapeString(message))
	attention, card := strings.Index(html, `id="attention-rejected"`), strings.Index(html, `id="h-upstream"`)
	require.True(t, attention >= 0 && attention < card, "the rejected receipt leads the page, before the summary cards")
	require.Contains(t, html[attention:card], "receiptd retry "+id, "with the command that sends it again")

	require.Equal(t, http.StatusNotFound, e.do(http.MethodGet, "/nope", "").code)
}
