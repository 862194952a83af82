// Command pagecheck loads a page in headless Chromium at a given window
// size and writes what a person sees: a screenshot of the first screen,
// the text laid out within it ("above the fold"), the page's whole visible
// text and its DOM. It fails when the page logs anything to the console
// (a script, a CSP violation, a failed load).
//
// Chromium's --dump-dom and --screenshot give no layout, so pagecheck
// drives Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ended by NUL on fds 3 and 4),
// with nothing but the standard library: no websocket, no port. The
// measurement runs as a DevTools evaluation, outside the page, so the page
// itself stays script-free and its Content-Security-Policy untouched.
//
//	go run ./.ci/pagecheck -url http://127.0.0.1:7080/ -out /tmp/shots/empty
//
// writes empty.png, empty.fold.txt, empty.page.txt and empty.html.
// With -headoffice ADDR it serves a stand-in head office instead (the
// push and the OpAMP channel, in the mode it is told: headoffice.go).
package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// foldText walks the text nodes and keeps those with a line box inside
// the viewport and are rendered (text in a closed <details> is not).
const foldText = `(() => {
  const out = [], h = window.innerHeight, w = window.innerWidth;
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const n = walk.currentNode;
    if (!n.textContent.trim()) continue;
    // A closed <details> hides its content with content-visibility, which
    // still lays it out: ask whether it is rendered.
    if (!n.parentElement.checkVisibility({contentVisibilityAuto: true})) continue;
    const r = document.createRange();
    r.selectNodeContents(n);
    for (const b of r.getClientRects()) {
      if (b.width > 0 && b.bottom > 0 && b.top < h && b.left < w) { out.push(n.textContent); break; }
    }
  }
  return out.join(' ').replace(/\s+/g, ' ').trim();
})()`

type browser struct {
	in     io.Writer
	out    *bufio.Reader
	nextID int
	events []map[string]any // every event seen, for the console check
}

type message struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Params    any             `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// call sends one command and waits for its answer, keeping the events
// that arrive meanwhile.
func (b *browser) call(session, method string, params any, result any) error {
	b.nextID++
	id := b.nextID
	if params == nil {
		params = map[string]any{}
	}
	raw, err := json.Marshal(message{ID: id, Method: method, SessionID: session, Params: params})
	if err != nil {
		return err
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("%s: write: %w", method, err)
	}
	for {
		m, err := b.read()
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if m.ID != id {
			continue
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	}
}

// read reads one message; an event is kept in b.events.
func (b *browser) read() (message, error) {
	raw, err := b.out.ReadBytes(0)
	if err != nil {
		return message{}, fmt.Errorf("read: %w", err)
	}
	raw = raw[:len(raw)-1]
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return message{}, fmt.Errorf("decode %.200q: %w", raw, err)
	}
	if m.ID == 0 {
		var ev map[string]any
		_ = json.Unmarshal(raw, &ev)
		b.events = append(b.events, ev)
	}
	return m, nil
}

// waitEvent reads until an event named method arrives.
func (b *browser) waitEvent(method string) error {
	for _, ev := range b.events {
		if ev["method"] == method {
			return nil
		}
	}
	for {
		m, err := b.read()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", method, err)
		}
		if m.ID == 0 && m.Method == method {
			return nil
		}
	}
}

// consoleMessages are the console and log entries among the events.
func (b *browser) consoleMessages() []string {
	var out []string
	for _, ev := range b.events {
		switch ev["method"] {
		case "Runtime.consoleAPICalled", "Log.entryAdded", "Runtime.exceptionThrown":
			raw, _ := json.Marshal(ev["params"])
			out = append(out, fmt.Sprintf("%s %s", ev["method"], raw))
		}
	}
	return out
}

type options struct {
	chromium, url, out string
	width, height      int
}

func main() {
	var o options
	flag.StringVar(&o.chromium, "chromium", "chromium", "the Chromium binary")
	flag.StringVar(&o.url, "url", "", "the page to load")
	flag.StringVar(&o.out, "out", "", "path prefix of the files written (.png, .fold.txt, .page.txt, .html)")
	flag.IntVar(&o.width, "width", 1280, "window width in CSS pixels")
	flag.IntVar(&o.height, "height", 900, "window height in CSS pixels: the fold")
	headOfficeAddr := flag.String("headoffice", "", "instead: serve a stand-in head office on this address (headoffice.go)")
	flag.Parse()
	if *headOfficeAddr != "" {
		if err := serveHeadOffice(*headOfficeAddr); err != nil {
			fmt.Fprintln(os.Stderr, "pagecheck:", err)
			os.Exit(1)
		}
		return
	}
	if o.url == "" || o.out == "" {
		fmt.Fprintln(os.Stderr, "usage: pagecheck -url URL -out PREFIX [-width 1280 -height 900]")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "pagecheck:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	profile, err := os.MkdirTemp("", "pagecheck-profile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		return err
	}
	fromChrome, chromeEnd, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(o.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-proxy-server", "--hide-scrollbars", "--user-data-dir="+profile, "--remote-debugging-pipe",
		fmt.Sprintf("--window-size=%d,%d", o.width, o.height), "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, chromeEnd} // fd 3: Chromium reads, fd 4: it writes
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", o.chromium, err)
	}
	toChrome.Close()
	chromeEnd.Close()
	defer func() {
		ourEnd.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	timer := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	b := &browser{in: ourEnd, out: bufio.NewReader(fromChrome)}
	if err := check(b, o); err != nil {
		return fmt.Errorf("%w\nChromium's log:\n%s", err, stderr.String())
	}
	return nil
}

func check(b *browser, o options) error {
	var target struct{ TargetID string }
	if err := b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target); err != nil {
		return err
	}
	var att struct{ SessionID string }
	if err := b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &att); err != nil {
		return err
	}
	s := att.SessionID
	for _, m := range []string{"Page.enable", "Runtime.enable", "Log.enable"} {
		if err := b.call(s, m, nil, nil); err != nil {
			return err
		}
	}
	metrics := map[string]any{"width": o.width, "height": o.height, "deviceScaleFactor": 1, "mobile": false}
	if err := b.call(s, "Emulation.setDeviceMetricsOverride", metrics, nil); err != nil {
		return err
	}
	var nav struct{ ErrorText string }
	if err := b.call(s, "Page.navigate", map[string]any{"url": o.url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		return fmt.Errorf("load %s: %s", o.url, nav.ErrorText)
	}
	if err := b.waitEvent("Page.loadEventFired"); err != nil {
		return err
	}
	return save(b, s, o)
}

// save writes the screenshot, the texts and the DOM, then fails on any
// console message.
func save(b *browser, s string, o options) error {
	texts := map[string]string{
		".fold.txt": foldText,
		".page.txt": "document.body.innerText",
		".html":     "document.documentElement.outerHTML",
	}
	for ext, expr := range texts {
		var ev struct {
			Result struct {
				Value string
			}
			ExceptionDetails any
		}
		if err := b.call(s, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &ev); err != nil {
			return err
		}
		if ev.ExceptionDetails != nil {
			return fmt.Errorf("evaluate %s: %v", ext, ev.ExceptionDetails)
		}
		if err := os.WriteFile(o.out+ext, []byte(ev.Result.Value+"\n"), 0o644); err != nil {
			return err
		}
	}
	var shot struct{ Data string }
	if err := b.call(s, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		return err
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		return fmt.Errorf("screenshot: %w", err)
	}
	if err := os.WriteFile(o.out+".png", png, 0o644); err != nil {
		return err
	}
	if msgs := b.consoleMessages(); len(msgs) > 0 {
		return errors.New("console messages:\n" + strings.Join(msgs, "\n"))
	}
	return nil
}
