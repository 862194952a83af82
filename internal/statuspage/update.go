package statuspage

import "time"

// Update is the update's state (update.json, docs/contract.md "Updating
// the fleet"); nil in Data: no release was ever offered to this till.
type Update struct {
	// State is update.json's phase (idle, verifying, staged, switching,
	// probation, installed, rolled_back, refused), or "unknown" when the
	// file cannot be read; Message says why, Since since when.
	State, Message string
	Since          time.Time
	// Running, Previous and Offered are the versions update.json names;
	// "": the version the package manager installed.
	Running, Previous, Offered string
	// Answering is the version answering this page (a release on
	// probation answers while Running still names the one before).
	Answering string
}

// updateCardFor is how long a rollback or a refusal stays in Needs
// attention: a week, so that an owner who looks at the page once a week
// still sees it; after that the Updates line still says it, not as a
// problem (a card that never clears would teach a person to skip the
// section, and keep alert at warn for good).
const updateCardFor = 7 * 24 * time.Hour

// updateView is the Updates section's line; nil when no release was
// ever offered.
type updateView struct {
	Symbol, Text string
}

// updateOf says where the update stands. Only an installed release is a
// ✓; a release on probation has not passed yet, and is a "…".
func updateOf(d Data) *updateView {
	u := d.Update
	if u == nil || u.State == "idle" || u.State == "" {
		return nil
	}
	since := ""
	if !u.Since.IsZero() {
		since = " (since " + ago(u.Since, d.Now) + ")"
	}
	runs := " This till runs " + versionWords(u.Answering) + "."
	switch u.State {
	case "verifying":
		return &updateView{"…", "A release file is being checked" + since + ": " + u.Message + "."}
	case "staged":
		return &updateView{"…", versionWords(u.Offered) + " is verified and waits for the switch, between sales and inside update.window" + since + "." + runs}
	case "switching":
		return &updateView{"…", "Switching to " + versionWords(u.Offered) + since + "."}
	case "probation":
		return &updateView{"…", versionWords(u.Offered) + " is on probation" + since + ": " + u.Message +
			". If it stops or fails, " + versionWords(u.Running) + " serves again by itself."}
	case "installed":
		return &updateView{"✓", versionWords(u.Running) + " is installed" + since + ", after its probation; the version before was " +
			versionWords(u.Previous) + "."}
	case "rolled_back":
		return &updateView{"✗", versionWords(u.Offered) + " was rolled back" + since + ": " + u.Message + "." + runs}
	case "refused":
		return &updateView{"✗", "The last release offered was refused" + since + ": " + u.Message + "." + runs}
	}
	return &updateView{"✗", "The update's state cannot be read: " + u.Message + "." + runs}
}

// versionWords names a version for a person; "" is the one the package
// manager installed.
func versionWords(v string) string {
	if v == "" {
		return "the version the package manager installed"
	}
	return "receiptd " + v
}

// updateItem is the attention item of a release rolled back or refused
// (for updateCardFor), or of an update.json that cannot be read. None
// touches the receipts: the version that ran before serves on, so it is
// a warning.
func updateItem(d Data) (attentionItem, bool) {
	u := d.Update
	if u == nil {
		return attentionItem{}, false
	}
	recent := u.Since.IsZero() || d.Now.Sub(u.Since) < updateCardFor
	status := step{Text: "The update's state, every version it names and the rolled-back files:", Command: "receiptd update status"}
	it := attentionItem{ID: "update", Level: levelWarn, Symbol: "⚠", Problem: u.Message, RawAt: ago(u.Since, d.Now)}
	switch {
	case u.State == "rolled_back" && recent:
		it.Title = versionWords(u.Offered) + " was rolled back: this till runs " + versionWords(u.Answering) + " again"
		it.Why = "The new version did not pass its probation. The version that ran before serves again, on the same address: receipts are accepted and sent as before. The rolled-back file is never tried again on this till."
		it.Steps = []step{
			{Text: "Tell the head office what is written above: they correct the release and offer a new one."},
			status, logStep(d),
		}
	case u.State == "refused" && recent:
		it.Title = "A release offered to this till was refused"
		it.Why = "Nothing changed: this till runs " + versionWords(u.Answering) + " as before, and receipts are accepted and sent as usual."
		it.Steps = []step{
			{Text: "Tell the head office (or whoever ran receiptd update apply) what is written above: the file, its signature or its version must be corrected."},
			status,
		}
	case u.State == "unknown":
		it.Title = "The update's state (update.json) cannot be read"
		it.Why = "Receipts are accepted and sent as usual; but this till takes no update, and its next start stops with this error rather than guess which version to run."
		it.Raw, it.Problem = u.Message, plain(u.Message)
		it.Steps = []step{{Text: "Move update.json aside (the error names it): the next start runs the version the package manager installed."}, logStep(d)}
	default:
		return attentionItem{}, false
	}
	return it, true
}
