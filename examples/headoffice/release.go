package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"golang.org/x/mod/semver"
)

// maxRelease bounds a release file: receiptd refuses one over 256 MiB
// (internal/update's MaxFile) unread.
const maxRelease = 256 << 20

// packageName is the top-level package receiptd takes from an offer.
const packageName = "receiptd"

// releaseRequest is PUT /release's body.
type releaseRequest struct {
	// File is the release file on the head office's disk; its signature
	// is FILE.minisig beside it, as `receiptd update apply` reads it.
	File string `json:"file"`
	// Version is the version offered; empty: the one the signature's
	// trusted comment names (given, it must be that one).
	Version string `json:"version"`
	// Waves is the staging, as parseWaves reads it; empty: "1,5,all".
	Waves string `json:"waves"`
}

// release is the one release the head office offers: its file, held in
// memory so that what is served is what was hashed, and its waves.
type release struct {
	version  string
	platform string // goos/goarch, from the signature's trusted comment
	file     string // as given
	name     string // the file's base name, the download path's last part
	data     []byte
	sha      []byte // SHA-256 of data: content_hash and the package's hash
	sig      []byte // the .minisig file's bytes
	all      []byte // all_packages_hash, new at every PUT
	match    url.Values
	waves    []wave
	current  int            // the wave offered now, an index into waves
	members  map[string]int // till UID → the index of its wave
	halt     *Halt
}

// wave is one stage of a release: the tills it took, in order.
type wave struct {
	spec    waveSpec
	started bool
	size    int // how many tills it takes, fixed when it starts
	tills   []string
}

// Halt is why a release stopped going to new tills: the first till of it
// that reported INSTALL_FAILED, and its message ("rolled back: ..." or a
// refusal naming its reason).
type Halt struct {
	Till    string `json:"till"`
	Wave    int    `json:"wave"` // 1-based
	Message string `json:"message"`
}

// loadRelease reads the release a PUT names and checks what the head
// office can check without a key: a .minisig of receiptd's shape beside
// the file, whose trusted comment names the version asked for.
func loadRelease(req releaseRequest, match url.Values) (*release, error) {
	if req.File == "" {
		return nil, fmt.Errorf(`"file" is missing: the path of the release file on the head office's disk`)
	}
	waves, err := parseWaves(req.Waves)
	if err != nil {
		return nil, err
	}
	data, err := readBounded(req.File, maxRelease)
	if err != nil {
		return nil, err
	}
	sig, err := readBounded(req.File+".minisig", maxSignature)
	if err != nil {
		return nil, fmt.Errorf("%w (sign it with minisign -S -t \"receiptd <version> <goos>/<goarch>\" -m FILE)", err)
	}
	comment, err := signedComment(sig)
	if err != nil {
		return nil, fmt.Errorf("%s.minisig: %w", req.File, err)
	}
	version, platform, err := parseComment(comment)
	if err != nil {
		return nil, fmt.Errorf("%s.minisig: %w", req.File, err)
	}
	if req.Version != "" && req.Version != version {
		return nil, fmt.Errorf("the signature's trusted comment names version %s, not %s: the tills would refuse it", version, req.Version)
	}
	if c := "v" + version; !semver.IsValid(c) || semver.Canonical(c) != strings.SplitN(c, "+", 2)[0] {
		return nil, fmt.Errorf("version %q is not a semantic version (MAJOR.MINOR.PATCH): the tills would refuse it", version)
	}
	sum := sha256.Sum256(data)
	nonce := make([]byte, 16)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	all := sha256.Sum256(append([]byte(packageName+" "+version+" "+hexOf(sum[:])+" "), nonce...))
	r := &release{
		version: version, platform: platform, file: req.File, name: filepath.Base(req.File),
		data: data, sha: sum[:], sig: sig, all: all[:], match: match, members: map[string]int{},
	}
	for _, s := range waves {
		r.waves = append(r.waves, wave{spec: s})
	}
	return r, nil
}

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such file on the head office's disk", path)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes: receiptd refuses it", path, limit)
	}
	return data, nil
}

// wavesText is the waves as asked for, "1,5,all".
func (r *release) wavesText() string {
	var parts []string
	for _, w := range r.waves {
		parts = append(parts, w.spec.text)
	}
	return strings.Join(parts, ",")
}

// path is where the file is served, on the tills' address.
func (r *release) path() string {
	return "/releases/" + hexOf(r.sha) + "/" + url.PathEscape(r.name)
}

// selects reports whether the release is for t: its labels match and its
// platform is the release's (or not known).
func (r *release) selects(t *Till) bool {
	goos, _, _ := strings.Cut(r.platform, "/")
	return labelsMatch(r.match, t) && (t.OS == "" || t.OS == goos)
}

// candidate reports whether t may join a wave: selected, described,
// accepting packages, in no wave yet, and running neither this version
// nor a newer one.
func (r *release) candidate(t *Till) bool {
	if _, in := r.members[t.UID]; in || t.Version == "" || !t.AcceptsPackages || !r.selects(t) {
		return false
	}
	v := "v" + t.Version
	return !semver.IsValid(v) || semver.Compare(v, "v"+r.version) < 0
}

// installed reports whether t has this release installed: INSTALLED, and
// the version it has is the release's.
func (r *release) installed(t *Till) bool {
	p := t.Package
	return p != nil && p.Status == "INSTALLED" && p.Version == r.version
}

// offer is the PackagesAvailable a till of a wave gets; base is the
// scheme and host it reached the head office by.
func (r *release) offer(base string) *protobufs.PackagesAvailable {
	return &protobufs.PackagesAvailable{
		AllPackagesHash: r.all,
		Packages: map[string]*protobufs.PackageAvailable{packageName: {
			Type:    protobufs.PackageType_PackageType_TopLevel,
			Version: r.version,
			Hash:    r.sha,
			File: &protobufs.DownloadableFile{
				DownloadUrl: base + r.path(),
				ContentHash: r.sha,
				Signature:   r.sig,
			},
		}},
	}
}

// nothingOffered withdraws an offer: no package, and the hash of none.
var nothingOffered = func() *protobufs.PackagesAvailable {
	sum := sha256.Sum256(nil)
	return &protobufs.PackagesAvailable{Packages: map[string]*protobufs.PackageAvailable{}, AllPackagesHash: sum[:]}
}()

// packagesFor is the offer t is owed, or nil: a till of a wave gets the
// release until it reports its all_packages_hash; a till that was offered
// something else (an earlier release, a withdrawn one) gets nothingOffered
// until it reports that.
func (o *office) packagesFor(t *Till) *protobufs.PackagesAvailable {
	want := nothingOffered
	if r := o.release; r != nil {
		if _, in := r.members[t.UID]; in {
			want = r.offer(t.base)
		}
	}
	if want == nothingOffered && len(t.offerSent) == 0 && len(t.offerSeen) == 0 {
		return nil // never offered anything
	}
	if bytes.Equal(t.offerSeen, want.AllPackagesHash) {
		return nil
	}
	t.offerSent = want.AllPackagesHash
	return want
}

func (o *office) putRelease(w http.ResponseWriter, r *http.Request) {
	var req releaseRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, `a JSON body, please: {"file": "/path/to/receiptd", "version": "1.4.0", "waves": "1,5,all"}: `+err.Error(), http.StatusBadRequest)
		return
	}
	rel, err := loadRelease(req, r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.release = rel
	sends := o.progress(nil)
	view := o.releaseView()
	o.mu.Unlock()
	o.send(r.Context(), sends)
	o.log.Printf("release %s (%s, %s) offered in waves %s to tills matching %q", rel.version, rel.platform,
		hexOf(rel.sha)[:12], rel.wavesText(), r.URL.RawQuery)
	writeJSON(w, view)
}

func (o *office) getRelease(w http.ResponseWriter, _ *http.Request) {
	o.mu.Lock()
	view := o.releaseView()
	o.mu.Unlock()
	if view == nil {
		http.Error(w, "no release is offered", http.StatusNotFound)
		return
	}
	writeJSON(w, view)
}

// deleteRelease withdraws the offer: the file is no longer served, and
// every till that was offered it gets nothingOffered.
func (o *office) deleteRelease(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	rel := o.release
	o.release = nil
	var sends []outgoing
	for _, t := range o.tills {
		if t.conn != nil {
			if pa := o.packagesFor(t); pa != nil {
				sends = append(sends, outgoing{t.conn, &protobufs.ServerToAgent{InstanceUid: uidBytes(t.UID), PackagesAvailable: pa}})
			}
		}
	}
	o.mu.Unlock()
	if rel == nil {
		http.Error(w, "no release is offered", http.StatusNotFound)
		return
	}
	o.send(r.Context(), sends)
	o.log.Printf("release %s withdrawn", rel.version)
	w.WriteHeader(http.StatusNoContent)
}

// download serves the release's file at its path: the tills' address,
// over TLS when the head office has -cert and -key.
func (o *office) download(w http.ResponseWriter, r *http.Request) {
	o.mu.Lock()
	rel := o.release
	o.mu.Unlock()
	if rel == nil || r.URL.EscapedPath() != rel.path() {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+hexOf(rel.sha)+`"`)
	http.ServeContent(w, r, rel.name, time.Time{}, bytes.NewReader(rel.data))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
