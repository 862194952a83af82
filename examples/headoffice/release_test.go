package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// uidOf is the UID of the test's till i: waves take tills in the order
// of their UIDs, so a test knows which till each wave takes.
func uidOf(i int) string { return fmt.Sprintf("00000000-0000-7000-8000-%012d", i) }

// makeRelease writes a release file of version for linux/amd64 and its
// .minisig, signed as `minisign -S -t` signs it; it returns its path and
// content.
func makeRelease(t *testing.T, s updatetest.Signer, version string) (string, []byte) {
	t.Helper()
	data := []byte("#!/bin/sh\n# receiptd " + version + ", as a test builds it\n")
	path := filepath.Join(t.TempDir(), "receiptd-linux-amd64")
	require.NoError(t, os.WriteFile(path, data, 0o755))
	s.SignFile(t, path, update.Comment(version, "linux/amd64"))
	return path, data
}

func putRelease(t *testing.T, admin, query string, body any) (int, string) {
	t.Helper()
	b, ok := body.(string)
	if !ok {
		j, err := json.Marshal(body)
		require.NoError(t, err)
		b = string(j)
	}
	req, err := http.NewRequest(http.MethodPut, admin+"/release?"+query, strings.NewReader(b))
	require.NoError(t, err)
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// getRelease is GET /release: its status and, with 200, the view.
func getRelease(t *testing.T, admin string) (int, ReleaseView) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, admin+"/release", nil)
	require.NoError(t, err)
	code, body := do(t, req)
	var v ReleaseView
	if code == http.StatusOK {
		require.NoError(t, json.Unmarshal([]byte(body), &v), body)
	}
	return code, v
}

func deleteRelease(t *testing.T, admin string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodDelete, admin+"/release", nil)
	require.NoError(t, err)
	code, _ := do(t, req)
	return code
}

// waitListed waits until the head office lists n described tills.
func waitListed(t *testing.T, admin string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		described := 0
		for _, tl := range tills(t, admin) {
			if tl.Version != "" {
				described++
			}
		}
		return described == n
	}, 10*time.Second, 10*time.Millisecond, "%d tills are listed", n)
}

// offered is the UIDs of the tills ever offered receiptd, sorted.
func offered(tills []*fakeTill) []string {
	out := []string{}
	for _, f := range tills {
		if f.offeredReceiptd() {
			out = append(out, f.uid)
		}
	}
	sort.Strings(out)
	return out
}

func uids(tills ...*fakeTill) []string {
	out := []string{}
	for _, f := range tills {
		out = append(out, f.uid)
	}
	sort.Strings(out)
	return out
}

// TestReleaseGoesOutInWavesAfterEachIsInstalled: with the default waves
// (1, 5, all) and a label selector, the canary alone is offered the
// release; the five of wave 2 only once the canary reports INSTALLED
// (INSTALLING is not enough); the rest, a till that connected during
// wave 1 among them, only once all five have. A till already on the
// version and one of another shop are never offered it.
func TestReleaseGoesOutInWavesAfterEachIsInstalled(t *testing.T) {
	opamp, admin := startOffice(t)
	file, _ := makeRelease(t, updatetest.NewSigner(t), "1.1.0")
	current := startTill(t, opamp, tillOptions{uid: uidOf(0), version: "1.1.0", shop: "017"})
	var fleet []*fakeTill
	for i := 1; i <= 7; i++ {
		fleet = append(fleet, startTill(t, opamp, tillOptions{uid: uidOf(i), version: "1.0.0", shop: "017"}))
	}
	other := startTill(t, opamp, tillOptions{uid: uidOf(8), version: "1.0.0", shop: "018"})
	all := append([]*fakeTill{current, other}, fleet...)
	waitListed(t, admin, len(all))

	code, body := putRelease(t, admin, "shop=017", map[string]string{"file": file})
	require.Equal(t, http.StatusOK, code, body)
	canary, wave2, rest := fleet[0], fleet[1:6], fleet[6]
	require.Eventually(t, func() bool { return canary.offer() != nil }, 10*time.Second, 10*time.Millisecond, "the canary is offered it")

	late := startTill(t, opamp, tillOptions{uid: uidOf(9), version: "1.0.0", shop: "017", http: true})
	all = append(all, late)
	waitListed(t, admin, len(all))
	canary.download(t)
	canary.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "")
	barrier(t, admin, all...)
	require.Equal(t, uids(canary), offered(all), "wave 1 is the canary alone, and INSTALLING does not end it")

	canary.install(t)
	want := uids(append([]*fakeTill{canary}, wave2...)...)
	require.Eventually(t, func() bool { return fmt.Sprint(offered(all)) == fmt.Sprint(want) }, 10*time.Second, 10*time.Millisecond,
		"wave 2 is the next five by UID: %v", offered(all))
	for _, f := range wave2[:4] {
		f.install(t)
	}
	wave2[4].download(t)
	wave2[4].report(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "")
	barrier(t, admin, all...)
	require.Equal(t, want, offered(all), "wave 3 waits for the last of wave 2")

	wave2[4].install(t)
	want = uids(append([]*fakeTill{canary, rest, late}, wave2...)...)
	require.Eventually(t, func() bool { return fmt.Sprint(offered(all)) == fmt.Sprint(want) }, 10*time.Second, 10*time.Millisecond,
		"wave 3 is the rest, the till that came late too: %v", offered(all))
	barrier(t, admin, all...)
	require.Equal(t, want, offered(all), "the till on 1.1.0 and shop 018's are never offered it")

	code, v := getRelease(t, admin)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "offering", v.State)
	require.Equal(t, 3, v.Wave)
	require.Equal(t, []string{canary.uid}, v.Waves[0].Tills)
	require.Equal(t, uids(wave2...), v.Waves[1].Tills)
	require.ElementsMatch(t, []string{rest.uid, late.uid}, v.Waves[2].Tills)
	require.Equal(t, []int{1, 5, 0}, []int{v.Waves[0].Installed, v.Waves[1].Installed, v.Waves[2].Installed})
}

// TestAFailureHaltsTheRelease: a till's INSTALL_FAILED for the offer, a
// rollback or a refusal, from the canary or from a till of the last wave,
// halts the release: GET /release and the page name the till and its
// message, and no till not offered it before is offered it afterwards,
// one that connects into the last wave's room included.
func TestAFailureHaltsTheRelease(t *testing.T) {
	rolledBack := "rolled back: the new version did not answer /readyz within 1m0s"
	for name, c := range map[string]struct {
		message string
		wave    int // the wave of the till that fails: 1, the canary, or 2, the rest
	}{
		"the canary rolled back":         {rolledBack, 1},
		"the canary refused":             {"refused (key): signed by key 0123456789ABCDEF, which this till does not trust (update.trusted_keys)", 1},
		"a till of the rest rolled back": {rolledBack, 2},
	} {
		t.Run(name, func(t *testing.T) {
			opamp, admin := startOffice(t)
			file, _ := makeRelease(t, updatetest.NewSigner(t), "1.1.0")
			var all []*fakeTill
			for i := 1; i <= 4; i++ {
				all = append(all, startTill(t, opamp, tillOptions{uid: uidOf(i), version: "1.0.0", shop: "017"}))
			}
			waitListed(t, admin, len(all))
			code, body := putRelease(t, admin, "", map[string]string{"file": file, "waves": "1,all"})
			require.Equal(t, http.StatusOK, code, body)
			canary, failing, before := all[0], all[0], uids(all[0])
			require.Eventually(t, func() bool { return canary.offer() != nil }, 10*time.Second, 10*time.Millisecond)
			if c.wave == 2 {
				canary.install(t)
				failing, before = all[1], uids(all...)
				require.Eventually(t, func() bool { return fmt.Sprint(offered(all)) == fmt.Sprint(before) },
					10*time.Second, 10*time.Millisecond, "wave 2 is every till")
			}

			failing.download(t)
			failing.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_Installing, "")
			failing.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, c.message)
			var v ReleaseView
			require.Eventually(t, func() bool { _, v = getRelease(t, admin); return v.State == "halted" }, 10*time.Second, 10*time.Millisecond)
			require.Equal(t, &Halt{Till: failing.uid, Wave: c.wave, Message: c.message}, v.Halted)

			all = append(all, startTill(t, opamp, tillOptions{uid: uidOf(5), version: "1.0.0", shop: "017"}))
			waitListed(t, admin, len(all))
			barrier(t, admin, all...)
			require.Equal(t, before, offered(all), "no other till is offered it")
			for _, tl := range tills(t, admin) {
				if tl.UID == failing.uid {
					require.Equal(t, &PackageStatus{Status: "INSTALL_FAILED", Version: "1.0.0", OfferedVersion: "1.1.0",
						OfferedHash: v.SHA256, Message: c.message}, tl.Package)
				}
			}
			resp, err := http.Get(admin + "/")
			require.NoError(t, err)
			page, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.NoError(t, resp.Body.Close())
			require.Contains(t, string(page), fmt.Sprintf("HALTED in wave %d: till %s: %s", c.wave, failing.uid, c.message))
		})
	}
}

// TestReleaseFileIsServedAsOfferedAndWithdrawn: the offer is a top-level
// receiptd of the version, whose content_hash is the file's SHA-256 and
// signature the .minisig's bytes; the file downloaded from its URL has
// that hash and passes the till's own checks (internal/update). DELETE
// withdraws it: the till that was offered it gets an offer of nothing,
// and the file is no longer served.
func TestReleaseFileIsServedAsOfferedAndWithdrawn(t *testing.T) {
	opamp, admin := startOffice(t)
	signer := updatetest.NewSigner(t)
	file, data := makeRelease(t, signer, "1.1.0")
	till := startTill(t, opamp, tillOptions{uid: uidOf(1), version: "1.0.0", shop: "017"})
	waitListed(t, admin, 1)
	code, body := putRelease(t, admin, "", map[string]string{"file": file, "version": "1.1.0", "waves": "1,all"})
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return till.offer() != nil }, 10*time.Second, 10*time.Millisecond)

	p := till.offer().Packages[packageName]
	require.Equal(t, protobufs.PackageType_PackageType_TopLevel, p.Type)
	require.Equal(t, "1.1.0", p.Version)
	sum := sha256.Sum256(data)
	require.Equal(t, sum[:], p.File.ContentHash)
	sig, err := os.ReadFile(file + ".minisig")
	require.NoError(t, err)
	require.Equal(t, sig, p.File.Signature)
	got := till.download(t)
	require.Equal(t, data, got)
	key, err := update.ParseKey(signer.PublicKey())
	require.NoError(t, err)
	policy := update.Policy{Keys: []update.Key{key}, Platform: "linux/amd64", Running: "1.0.0"}
	require.NoError(t, policy.Check(update.Offer{Version: p.Version, SHA256: p.File.ContentHash, Signature: p.File.Signature},
		bytes.NewReader(got)), "the till's checks pass the offer and the file served")

	wrong := strings.Replace(p.File.DownloadUrl, hexOf(sum[:]), strings.Repeat("0", 64), 1)
	require.Equal(t, http.StatusNotFound, status(t, wrong), "only the release's hash is served")

	require.Equal(t, http.StatusNoContent, deleteRelease(t, admin))
	empty := sha256.Sum256(nil)
	require.Eventually(t, func() bool {
		o := till.offer()
		return len(o.Packages) == 0 && bytes.Equal(o.AllPackagesHash, empty[:])
	},
		10*time.Second, 10*time.Millisecond, "the till offered it is offered nothing")
	require.Equal(t, http.StatusNotFound, status(t, p.File.DownloadUrl), "the file is no longer served")
	code, _ = getRelease(t, admin)
	require.Equal(t, http.StatusNotFound, code)
	require.Equal(t, http.StatusNotFound, deleteRelease(t, admin))
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.StatusCode
}

// TestPutReleaseRefusesWhatTheTillsWouldRefuse: a PUT the tills could
// only refuse, or that cannot be read, is refused with 400 saying why,
// and the release offered before stays as it was.
func TestPutReleaseRefusesWhatTheTillsWouldRefuse(t *testing.T) {
	_, admin := startOffice(t)
	signer := updatetest.NewSigner(t)
	file, _ := makeRelease(t, signer, "1.1.0")
	code, body := putRelease(t, admin, "", map[string]string{"file": file})
	require.Equal(t, http.StatusOK, code, body)
	_, before := getRelease(t, admin)

	unsigned := filepath.Join(t.TempDir(), "receiptd")
	require.NoError(t, os.WriteFile(unsigned, []byte("x"), 0o755))
	signed := func(comment string) string {
		path := filepath.Join(t.TempDir(), "receiptd")
		require.NoError(t, os.WriteFile(path, []byte("x"), 0o755))
		signer.SignFile(t, path, comment)
		return path
	}
	for name, c := range map[string]struct {
		body any
		says string
	}{
		"not JSON":           {"file=" + file, "a JSON body"},
		"an unknown field":   {map[string]string{"file": file, "wave": "1"}, `unknown field "wave"`},
		"no file":            {map[string]string{"version": "1.1.0"}, `"file" is missing`},
		"a file not there":   {map[string]string{"file": file + ".gone"}, "no such file"},
		"no signature":       {map[string]string{"file": unsigned}, "minisign -S"},
		"another version":    {map[string]string{"file": file, "version": "1.2.0"}, "names version 1.1.0, not 1.2.0"},
		"no platform":        {map[string]string{"file": signed("receiptd 1.1.0")}, `not "receiptd <version> <goos>/<goarch>"`},
		"not receiptd's":     {map[string]string{"file": signed("timestamp:1700000000")}, "the tills would refuse it"},
		"not semantic":       {map[string]string{"file": signed("receiptd 1.1 linux/amd64")}, "not a semantic version"},
		"a wave of none":     {map[string]string{"file": file, "waves": "0,all"}, `wave 1 is "0"`},
		"all first":          {map[string]string{"file": file, "waves": "all,1"}, `"all" is the last wave`},
		"over a hundred pct": {map[string]string{"file": file, "waves": "1,150%"}, "more than 100%"},
	} {
		t.Run(name, func(t *testing.T) {
			code, body := putRelease(t, admin, "", c.body)
			require.Equal(t, http.StatusBadRequest, code, body)
			require.Contains(t, body, c.says)
			_, after := getRelease(t, admin)
			require.Equal(t, before, after, "the release offered stays")
		})
	}
}

// TestAPutAfterAHaltStartsOver: PUT again after a halt offers the release
// anew (another all_packages_hash), and the canary's failure of the first
// offer, reported again when it reconnects, does not halt the new one;
// its failure of the new offer does.
func TestAPutAfterAHaltStartsOver(t *testing.T) {
	opamp, admin := startOffice(t)
	file, _ := makeRelease(t, updatetest.NewSigner(t), "1.1.0")
	canary := startTill(t, opamp, tillOptions{uid: uidOf(1), version: "1.0.0", shop: "017"})
	other := startTill(t, opamp, tillOptions{uid: uidOf(2), version: "1.0.0", shop: "017"})
	waitListed(t, admin, 2)
	code, body := putRelease(t, admin, "", map[string]string{"file": file})
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return canary.offer() != nil }, 10*time.Second, 10*time.Millisecond)
	first := canary.offer().AllPackagesHash
	canary.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed, "rolled back: it crashed")
	require.Eventually(t, func() bool { _, v := getRelease(t, admin); return v.State == "halted" }, 10*time.Second, 10*time.Millisecond)

	code, body = putRelease(t, admin, "", map[string]string{"file": file})
	require.Equal(t, http.StatusOK, code, body)
	require.Eventually(t, func() bool { return !bytes.Equal(canary.offer().AllPackagesHash, first) }, 10*time.Second, 10*time.Millisecond,
		"the canary is offered the release anew")
	canary.stop()
	again := startTill(t, opamp, tillOptions{uid: canary.uid, version: "1.0.0", shop: "017", pkgs: canary.pkgs})
	barrier(t, admin, again, other)
	_, v := getRelease(t, admin)
	require.Equal(t, "offering", v.State, "the status of the first offer halts nothing: %+v", v.Halted)
	require.Equal(t, []string{canary.uid}, v.Waves[0].Tills)

	again.report(t, protobufs.PackageStatusEnum_PackageStatusEnum_InstallFailed,
		"refused (rolled back): the file 0c2f73eaef3f was rolled back on this till before and is never tried again")
	require.Eventually(t, func() bool { _, v = getRelease(t, admin); return v.State == "halted" }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, canary.uid, v.Halted.Till)
	require.False(t, other.offeredReceiptd(), "the halt holds the second wave")
}
