package statuspage

import (
	"time"
)

// Control is the OpAMP channel to the head office ([control]).
type Control struct {
	URL string
	// LastContact is when the head office last answered; zero: not since
	// Started, when receiptd started.
	LastContact, Started time.Time
	// RemoteStatus is APPLYING, APPLIED, FAILED or "" (no remote config
	// yet); RemoteMessage says why a FAILED one was not applied.
	RemoteStatus, RemoteMessage string
	// Connected: the server answered lately. LastError is why the last
	// attempt to reach it failed ("": it answered since, or no attempt
	// has ended yet), FailingSince the first failed attempt since the
	// last answer.
	Connected    bool
	LastError    string
	FailingSince time.Time
}

// controlView is the channel's line in the Head office section; nil when
// the channel is off.
type controlView struct {
	Symbol, Text string
}

// controlOf says what the channel does now, from the start: connecting,
// connected, refused or failing (with why), and the last contact.
func controlOf(d Data) *controlView {
	c := d.Control
	if c == nil || c.URL == "" {
		return nil
	}
	server := "the head office's management server (OpAMP, " + c.URL + ")"
	last := "none since receiptd started"
	if !c.LastContact.IsZero() {
		last = ago(c.LastContact, d.Now)
	}
	v := &controlView{}
	switch {
	case c.Connected:
		v.Symbol, v.Text = "✓", "Connected to "+server+"; last contact "+last+"."+remoteWords(c)
	case c.LastError != "":
		v.Symbol, v.Text = "✗", "Not connected to "+server+": failing since "+ago(c.FailingSince, d.Now)+" ("+c.LastError+
			"); last contact "+last+". receiptd keeps trying; sales are not affected."+remoteWords(c)
	case c.LastContact.IsZero():
		v.Symbol, v.Text = "…", "Connecting to "+server+" since receiptd started ("+ago(c.Started, d.Now)+")."+remoteWords(c)
	default:
		v.Symbol, v.Text = "✗", "Not connected to "+server+": no answer since the last contact, "+last+
			". receiptd keeps trying; sales are not affected."+remoteWords(c)
	}
	return v
}

// remoteWords says what became of the head office's last configuration.
func remoteWords(c *Control) string {
	switch c.RemoteStatus {
	case "APPLIED":
		return " Its last configuration is applied."
	case "APPLYING":
		return " Its last configuration is being applied."
	case "FAILED":
		return " Its last configuration was not applied: see Needs attention."
	}
	return " No configuration received from it yet: this till runs on its own file."
}

// controlUnreached is how long without an answer from the head office
// makes the page say so: a till offline for a day is worth a look, and a
// shorter outage is the internet's usual weather.
const controlUnreached = 24 * time.Hour

// controlItem is the attention item of the channel: a remote
// configuration refused, or a head office not reached for a day. Neither
// touches the receipts, so it is a warning.
func controlItem(d Data) (attentionItem, bool) {
	c := d.Control
	if c == nil || c.URL == "" {
		return attentionItem{}, false
	}
	if c.RemoteStatus == "FAILED" {
		return attentionItem{
			ID: "control", Level: levelWarn, Symbol: "⚠",
			Title:   "The head office's last configuration was not applied",
			Why:     "This till runs on with the configuration it had; receipts are accepted and sent as before.",
			Problem: c.RemoteMessage,
			Steps: []step{
				{Text: "Tell the head office what is written above: they correct the configuration they send to this till, and it is applied when it arrives."},
				logStep(d),
			},
		}, true
	}
	last, since := c.LastContact, "since receiptd started "
	if last.IsZero() {
		last = c.Started
	} else {
		since = "since "
	}
	if last.IsZero() || d.Now.Sub(last) < controlUnreached {
		return attentionItem{}, false
	}
	return attentionItem{
		ID: "control", Level: levelWarn, Symbol: "⚠",
		Title: "The head office has not been reached " + since + ago(last, d.Now),
		Why:   "Receipts are accepted and sent as usual; but the head office cannot see this till or change its configuration. It keeps the last configuration it received.",
		Steps: []step{
			{Text: "Check this till's internet connection (a web page opens?)."},
			{Text: "Check control.opamp_url in receiptd's config file (" + c.URL + ") with the head office: the address and the token."},
			logStep(d),
		},
	}, true
}
