package metrics

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAnswersReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	m := New()
	require.Nil(t, scrape(t, m.Handler())["receiptd_answers_held"], "nothing before WatchAnswers")
	n, b := 3, int64(4096)
	m.WatchAnswers(func() (int, int64) { return n, b })
	m.AnswerDropped()
	m.AnswerDropped()
	fams := scrape(t, m.Handler())
	require.Equal(t, 3.0, value(t, fams, "receiptd_answers_held"))
	require.Equal(t, 4096.0, value(t, fams, "receiptd_answers_held_bytes"))
	require.Equal(t, 2.0, value(t, fams, "receiptd_answers_dropped_total"))

	var nilM *Metrics
	require.NotPanics(t, func() {
		nilM.WatchAnswers(func() (int, int64) { return 0, 0 })
		nilM.AnswerDropped()
	})
}
