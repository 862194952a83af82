package main

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server/types"
)

// waveSpec is one wave as asked for: a number of tills, a percentage of
// the matching tills seen when the wave starts, or all the rest.
type waveSpec struct {
	text string
	n    int // a number of tills, or a percentage with pct
	pct  bool
	all  bool
}

// maxWaves bounds a release's waves: more is a typo, not a plan.
const maxWaves = 20

// defaultWaves is a canary, then five tills, then the rest.
const defaultWaves = "1,5,all"

// parseWaves reads waves as "1,5,all": each a number of tills (at least
// 1), a percentage ("5%", 1 to 100) of the matching tills seen when that
// wave starts (at least one till), or "all" (the rest, last only). A list
// that does not end with "all" gets it: a release reaches every till it
// selects in the end. Empty: defaultWaves.
func parseWaves(s string) ([]waveSpec, error) {
	if strings.TrimSpace(s) == "" {
		s = defaultWaves
	}
	parts := strings.Split(s, ",")
	if len(parts) > maxWaves {
		return nil, fmt.Errorf("waves: %d of them, at most %d", len(parts), maxWaves)
	}
	var out []waveSpec
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if p == "all" {
			if i != len(parts)-1 {
				return nil, fmt.Errorf("waves: \"all\" is the last wave, not wave %d of %q", i+1, s)
			}
			out = append(out, waveSpec{text: p, all: true})
			continue
		}
		num, pct := strings.CutSuffix(p, "%")
		n, err := strconv.Atoi(num)
		switch {
		case err != nil || n < 1 || num != strconv.Itoa(n):
			return nil, fmt.Errorf("waves: wave %d is %q, not a number of tills (1 or more), a percentage (5%%) or \"all\"", i+1, p)
		case pct && n > 100:
			return nil, fmt.Errorf("waves: wave %d is %q, more than 100%%", i+1, p)
		}
		out = append(out, waveSpec{text: p, n: n, pct: pct})
	}
	if !out[len(out)-1].all {
		out = append(out, waveSpec{text: "all", all: true})
	}
	return out, nil
}

// size is how many tills the wave takes, given how many tills the
// release selects among those seen when it starts.
func (w waveSpec) size(seen int) int {
	switch {
	case w.all:
		return int(^uint(0) >> 1)
	case w.pct:
		return max(1, (seen*w.n+99)/100)
	}
	return w.n
}

// outgoing is a message to push to a till at once (over WebSocket; over
// HTTP polling the next answer carries it).
type outgoing struct {
	conn types.Connection
	msg  *protobufs.ServerToAgent
}

func (o *office) send(ctx context.Context, out []outgoing) {
	for _, s := range out {
		_ = s.conn.Send(ctx, s.msg) // over HTTP polling it goes with the next answer
	}
}

// progress moves the release on; o.mu is held. The wave offered now
// takes connected candidates, in the order of their UIDs, while it has
// room; once it has tills and every one of them has the release
// installed, the next wave starts. A halted release takes no till. It
// returns the offers to push to the tills that joined, but except's: its
// answer carries its own.
func (o *office) progress(except *Till) []outgoing {
	r := o.release
	if r == nil || r.halt != nil {
		return nil
	}
	var out []outgoing
	for {
		w := &r.waves[r.current]
		if !w.started {
			w.started, w.size = true, w.spec.size(o.selected(r))
		}
		if len(w.tills) < w.size {
			out = append(out, o.fill(r, w, except)...)
		}
		if r.current == len(r.waves)-1 || !r.waveDone(w, o.tills) {
			return out
		}
		r.current++
		o.log.Printf("release %s: wave %d of %d done, wave %d (%s) starts", r.version, r.current, len(r.waves),
			r.current+1, r.waves[r.current].spec.text)
	}
}

// fill adds connected candidates to w, the wave offered now, while it
// has room.
func (o *office) fill(r *release, w *wave, except *Till) []outgoing {
	var out []outgoing
	for _, t := range o.sorted() {
		if len(w.tills) >= w.size {
			break
		}
		if t.conn == nil || !r.candidate(t) {
			continue
		}
		r.members[t.UID] = r.current
		w.tills = append(w.tills, t.UID)
		o.log.Printf("release %s: till %s joins wave %d", r.version, t.UID, r.current+1)
		if pa := o.packagesFor(t); pa != nil && t != except {
			out = append(out, outgoing{t.conn, &protobufs.ServerToAgent{InstanceUid: uidBytes(t.UID), PackagesAvailable: pa}})
		}
	}
	return out
}

// sorted is every till, by UID.
func (o *office) sorted() []*Till {
	out := make([]*Till, 0, len(o.tills))
	for _, t := range o.tills {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UID < out[j].UID })
	return out
}

// selected counts the described tills the release is for: what a
// percentage of a wave counts from.
func (o *office) selected(r *release) int {
	n := 0
	for _, t := range o.tills {
		if t.Version != "" && r.selects(t) {
			n++
		}
	}
	return n
}

// waveDone reports whether w has tills and all have the release installed.
func (r *release) waveDone(w *wave, tills map[string]*Till) bool {
	for _, uid := range w.tills {
		if !r.installed(tills[uid]) {
			return false
		}
	}
	return len(w.tills) > 0
}

// observe halts the release when t, a till of a wave, reports that this
// offer failed: INSTALL_FAILED with the offer's all_packages_hash (a
// status of an earlier offer halts nothing). A rollback or a refusal,
// any failure halts: no till not yet offered the release is offered it.
func (o *office) observe(t *Till) {
	r := o.release
	if r == nil || r.halt != nil || t.Package == nil || t.Package.Status != "INSTALL_FAILED" || !bytes.Equal(t.offerSeen, r.all) {
		return
	}
	wi, in := r.members[t.UID]
	if !in {
		return
	}
	r.halt = &Halt{Till: t.UID, Wave: wi + 1, Message: t.Package.Message}
	o.log.Printf("release %s HALTED: till %s (wave %d): %s", r.version, t.UID, wi+1, t.Package.Message)
}

// ReleaseView is the release as GET /release shows it.
type ReleaseView struct {
	Version  string        `json:"version"`
	Platform string        `json:"platform"` // from the signature's trusted comment
	File     string        `json:"file"`
	Size     int           `json:"size"`
	SHA256   string        `json:"sha256"`
	Path     string        `json:"path"`  // where the tills' address serves the file
	Offer    string        `json:"offer"` // the all_packages_hash offered, hex
	Match    url.Values    `json:"match"` // the labels that select the tills; none: all
	State    string        `json:"state"` // "offering" or "halted"
	Wave     int           `json:"wave"`  // the wave offered now, 1-based
	Waves    []WaveView    `json:"waves"`
	Halted   *Halt         `json:"halted,omitempty"`
	Tills    []ReleaseTill `json:"tills"` // the tills of the waves, by wave and in the order they joined
}

// WaveView is one wave of ReleaseView.
type WaveView struct {
	Size      string   `json:"size"`         // as asked: "1", "5%", "all"
	Of        int      `json:"of,omitempty"` // how many tills it takes, once started ("all": none)
	Started   bool     `json:"started"`
	Tills     []string `json:"tills"`     // UIDs, in the order they joined
	Installed int      `json:"installed"` // of them, how many have the release installed
}

// ReleaseTill is a till of a wave and its last package status.
type ReleaseTill struct {
	UID     string         `json:"uid"`
	Wave    int            `json:"wave"`
	Version string         `json:"version"` // the version it runs (service.version)
	Package *PackageStatus `json:"package,omitempty"`
}

// releaseView is the release now, or nil; o.mu is held.
func (o *office) releaseView() *ReleaseView {
	r := o.release
	if r == nil {
		return nil
	}
	v := &ReleaseView{
		Version: r.version, Platform: r.platform, File: r.file, Size: len(r.data), SHA256: hexOf(r.sha),
		Path: r.path(), Offer: hexOf(r.all), Match: r.match, State: "offering", Wave: r.current + 1,
		Halted: r.halt, Tills: []ReleaseTill{},
	}
	if r.halt != nil {
		v.State = "halted"
	}
	for i, w := range r.waves {
		wv := WaveView{Size: w.spec.text, Started: w.started, Tills: append([]string{}, w.tills...)}
		if w.started && !w.spec.all {
			wv.Of = w.size
		}
		for _, uid := range w.tills {
			t := o.tills[uid]
			if r.installed(t) {
				wv.Installed++
			}
			rt := ReleaseTill{UID: uid, Wave: i + 1, Version: t.Version}
			if t.Package != nil {
				p := *t.Package
				rt.Package = &p
			}
			v.Tills = append(v.Tills, rt)
		}
		v.Waves = append(v.Waves, wv)
	}
	return v
}

// String is the release's line above the table of tills.
func (v *ReleaseView) String() string {
	s := fmt.Sprintf("release %s %s (sha256 %s, to tills matching %q)", v.Version, v.Platform, v.SHA256[:12], v.Match.Encode())
	if h := v.Halted; h != nil {
		return fmt.Sprintf("%s HALTED in wave %d: till %s: %s", s, h.Wave, h.Till, h.Message)
	}
	w := v.Waves[v.Wave-1]
	return fmt.Sprintf("%s: wave %d of %d (%s), %d of its %d tills installed", s, v.Wave, len(v.Waves), w.Size,
		w.Installed, len(w.Tills))
}
