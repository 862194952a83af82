package fleetcontrol

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/receiptd/receiptd/internal/config"
	"github.com/receiptd/receiptd/internal/release"
	"github.com/receiptd/receiptd/internal/sim"
	"github.com/receiptd/receiptd/internal/testing/harness"
	"github.com/receiptd/receiptd/internal/testing/testkit"
	"github.com/receiptd/receiptd/internal/update"
	"github.com/receiptd/receiptd/internal/update/updatetest"
)

// updateProbation is each release's probation in the fleet update test.
const updateProbation = 3 * time.Second

// binaries are the programs the fleet update test runs, built once.
type binaries struct {
	v100, v110, bad, headoffice string
}

func buildBinaries(t *testing.T) binaries {
	t.Helper()
	dir := t.TempDir()
	build := func(name, ldflags, pkg string) string {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", out, pkg)
		b, err := cmd.CombinedOutput()
		require.NoError(t, err, "build %s: %s", name, b)
		return out
	}
	return binaries{
		v100:       build("receiptd-1.0.0", "-X main.version=1.0.0", "../../../cmd/receiptd"),
		v110:       build("receiptd-1.1.0", "-X main.version=1.1.0", "../../../cmd/receiptd"),
		bad:        build("badrelease", "", "../../../cmd/receiptd/testdata/badrelease"),
		headoffice: build("headoffice", "", "../../../examples/headoffice"),
	}
}

// releaseFile copies bin into a folder of its own as a release file
// signed by s with comment; change, when not nil, alters the file after
// it is signed (a tampered release).
func releaseFile(t *testing.T, s updatetest.Signer, bin, comment string, change func([]byte) []byte) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "receiptd")
	require.NoError(t, os.WriteFile(path+".minisig", s.Sign(data, comment), 0o644))
	if change != nil {
		data = change(data)
	}
	require.NoError(t, os.WriteFile(path, data, 0o755))
	return path
}

// headOffice is examples/headoffice running as its own process.
type headOffice struct {
	opamp, admin string
}

func startHeadOffice(t *testing.T, bin string) headOffice {
	t.Helper()
	listen, err := harness.FreeAddr()
	require.NoError(t, err)
	admin, err := harness.FreeAddr()
	require.NoError(t, err)
	var out testkit.SyncBuffer // stdout and stderr both: one lock
	cmd := exec.Command(bin, "-listen", listen, "-admin", admin)
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("headoffice's output:\n%s", out.String())
		}
	})
	ho := headOffice{opamp: "ws://" + listen + "/v1/opamp", admin: "http://" + admin}
	require.Eventually(t, func() bool {
		resp, err := http.Get(ho.admin + "/tills")
		if err == nil {
			_ = resp.Body.Close()
		}
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)
	return ho
}

// call sends body to the head office's admin route and decodes its JSON
// answer into out (when not nil), requiring a 2xx.
func (ho headOffice) call(t *testing.T, method, route string, body any, out any) {
	t.Helper()
	code, b := ho.do(t, method, route, body)
	require.Less(t, code, 300, "%s %s: %s", method, route, b)
	if out != nil {
		require.NoError(t, json.Unmarshal(b, out), "%s", b)
	}
}

// do sends body to the head office's admin route and returns its answer.
func (ho headOffice) do(t *testing.T, method, route string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, ho.admin+route, r)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// hoTill is a till as GET /tills shows it.
type hoTill struct {
	UID     string            `json:"uid"`
	Version string            `json:"version"`
	Labels  map[string]string `json:"labels"`
	Package *struct {
		Status         string `json:"status"`
		Version        string `json:"version"`
		OfferedVersion string `json:"offeredVersion"`
		Message        string `json:"message"`
	} `json:"package"`
}

// hoRelease is GET /release.
type hoRelease struct {
	Version string `json:"version"`
	State   string `json:"state"`
	Wave    int    `json:"wave"`
	Waves   []struct {
		Size      string   `json:"size"`
		Started   bool     `json:"started"`
		Tills     []string `json:"tills"`
		Installed int      `json:"installed"`
	} `json:"waves"`
	Halted *struct {
		Till    string `json:"till"`
		Message string `json:"message"`
	} `json:"halted"`
}

func (ho headOffice) tills(t *testing.T) []hoTill {
	var out []hoTill
	ho.call(t, http.MethodGet, "/tills", nil, &out)
	return out
}

// release is GET /release; the zero hoRelease when none is offered.
func (ho headOffice) release(t *testing.T) hoRelease {
	var out hoRelease
	code, b := ho.do(t, http.MethodGet, "/release", nil)
	if code == http.StatusNotFound {
		return out
	}
	require.Equal(t, http.StatusOK, code, "%s", b)
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return out
}

// waitRelease waits until cond holds of GET /release and the tills.
func (ho headOffice) waitRelease(t *testing.T, what string, timeout time.Duration, cond func(hoRelease, []hoTill) bool) {
	t.Helper()
	var r hoRelease
	var tills []hoTill
	require.Eventually(t, func() bool {
		r, tills = ho.release(t), ho.tills(t)
		return cond(r, tills)
	}, timeout, 200*time.Millisecond, "%s; the release: %+v", what, func() any { return r })
}

// TestFleetUpdateEndToEnd runs 20 real receiptd 1.0.0 processes under
// examples/headoffice (opamp-go's server package) while every till takes
// a receipt every postEvery, and checks issue 39's "done when": a signed
// release that exits at start is rolled back on the canary and halts the
// release, no other till ever offered it; a tampered file, one signed by
// a key the tills do not trust and one for another platform are refused
// by the canary with nothing run; the head office does not offer an older
// version; a good release goes to 1 till, then 5, then the other 14, and
// all 20 run it; every receipt posted all through is stored once and
// issued once. Kill -9 at each step of a switch is
// cmd/receiptd's TestKillAtEachStepOfAnOfferedSwitch. Opt-in:
// RECEIPTD_UPDATE_E2E=1 (.ci/run's "updates" step).
func TestFleetUpdateEndToEnd(t *testing.T) {
	if os.Getenv("RECEIPTD_UPDATE_E2E") != "1" {
		t.Skip("set RECEIPTD_UPDATE_E2E=1 to run 20 receiptd processes taking releases from examples/headoffice")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the switch is built on Linux")
	}
	began := time.Now()
	bins := buildBinaries(t)
	s := testkit.StartSim(t, sim.Options{Seed: 39})
	ho := startHeadOffice(t, bins.headoffice)
	signer := updatetest.NewSigner(t)
	tills := startUpdatingFleet(t, bins.v100, s.URL(), ho.opamp, signer)
	ho.waitRelease(t, "the head office knows every till", time.Minute, func(_ hoRelease, ts []hoTill) bool {
		return len(ts) == tillCount
	})
	t.Logf("%d tills ready in %s", len(tills), time.Since(began).Round(time.Millisecond))

	l := &ledger{till: map[string]string{}, answers: map[int]int{}}
	stopPosting := l.postOnEvery(t, tills)

	platform := runtime.GOOS + "/" + runtime.GOARCH
	crashing := releaseFile(t, signer, bins.bad, update.Comment("1.2.0", platform), nil)
	canary := haltsOnTheCanary(t, ho, crashing, "rolled back: ", 30*time.Second)
	t.Logf("a release that exits at start: rolled back on the canary %s, release halted", canary)

	foreign := updatetest.NewSigner(t)
	otherArch := "linux/arm64"
	if runtime.GOARCH == "arm64" {
		otherArch = "linux/amd64"
	}
	for name, c := range map[string]struct{ file, reason string }{
		"tampered": {releaseFile(t, signer, bins.v110, update.Comment("1.1.0", platform),
			func(b []byte) []byte { return append(b, "tampered"...) }), "refused (signature)"},
		"foreign key":    {releaseFile(t, foreign, bins.v110, update.Comment("1.1.0", platform), nil), "refused (key)"},
		"wrong platform": {releaseFile(t, signer, bins.v110, "receiptd 1.1.0 "+otherArch, nil), "refused (comment)"},
	} {
		who := haltsOnTheCanary(t, ho, c.file, c.reason, 30*time.Second)
		t.Logf("%s: refused by the canary %s", name, who)
	}
	older := releaseFile(t, signer, bins.v110, update.Comment("0.9.0", platform), nil)
	ho.call(t, http.MethodPut, "/release", map[string]string{"file": older, "waves": "1"}, nil)
	time.Sleep(2 * pollEvery) // an offer would be out by now
	require.Empty(t, ho.release(t).Waves[0].Tills, "the head office offers no till an older version")
	ho.call(t, http.MethodDelete, "/release", nil, nil)
	for _, tl := range tills {
		st, err := release.ReadState(tl.proc().Config().DataDir)
		require.NoError(t, err)
		require.Nil(t, st.Running, "%s still runs its entry point's own 1.0.0", tl.name)
	}

	good := releaseFile(t, signer, bins.v110, update.Comment("1.1.0", platform), nil)
	rolled := time.Now()
	ho.call(t, http.MethodPut, "/release", map[string]string{"file": good, "waves": "1,5,all"}, nil)
	ho.waitRelease(t, "1.1.0 reaches every till", 4*time.Minute, func(r hoRelease, ts []hoTill) bool {
		for _, tl := range ts {
			if tl.Version != "1.1.0" || tl.Package == nil || tl.Package.Status != "INSTALLED" {
				return false
			}
		}
		return r.State != "halted"
	})
	r := ho.release(t)
	require.Len(t, r.Waves, 3)
	sizes := []int{len(r.Waves[0].Tills), len(r.Waves[1].Tills), len(r.Waves[2].Tills)}
	require.Equal(t, []int{1, 5, tillCount - 6}, sizes, "1 till, then 5, then the rest")
	t.Logf("1.1.0 on all %d tills in %s, waves %v", tillCount, time.Since(rolled).Round(time.Second), sizes)
	for _, tl := range tills {
		v, _ := served(t, tl.url())
		require.Equal(t, "1.1.0", v, "%s answers as 1.1.0", tl.name)
	}

	stopPosting()
	l.checkOnce(t, s, tills)
	t.Logf("update e2e totals: %d receipts on %d tills, answers %v, connection errors %d, in %s",
		len(l.till), len(tills), l.answers, l.connErrs, time.Since(began).Round(time.Second))
}

// haltsOnTheCanary offers file in one wave of one till and waits until
// that till reports INSTALL_FAILED with a message holding reason and the
// head office halts the release; no other till is offered it. It
// withdraws the release and returns the canary's UID.
func haltsOnTheCanary(t *testing.T, ho headOffice, file, reason string, timeout time.Duration) string {
	t.Helper()
	ho.call(t, http.MethodPut, "/release", map[string]string{"file": file, "waves": "1,all"}, nil)
	ho.waitRelease(t, "the canary refuses or rolls back, and the release halts", timeout, func(r hoRelease, _ []hoTill) bool {
		return r.State == "halted" && r.Halted != nil && strings.Contains(r.Halted.Message, reason)
	})
	r := ho.release(t)
	require.Len(t, r.Waves[0].Tills, 1)
	require.False(t, r.Waves[1].Started, "halted before the next wave")
	canary := r.Halted.Till
	for _, tl := range ho.tills(t) {
		require.Equal(t, "1.0.0", tl.Version, "till %s runs 1.0.0", tl.UID)
		if tl.UID != canary && tl.Package != nil && tl.Package.OfferedVersion == r.Version {
			require.Equal(t, "INSTALLED", tl.Package.Status, "till %s was never offered it: %+v", tl.UID, *tl.Package)
		}
	}
	ho.call(t, http.MethodDelete, "/release", nil, nil)
	return canary
}

// startUpdatingFleet starts 20 tills of bin (1.0.0) trusting signer,
// under the head office at opampURL, all over WebSocket.
func startUpdatingFleet(t *testing.T, bin, upstream, opampURL string, signer updatetest.Signer) []*till {
	return startTills(t, bin, func(tl *till) config.Config {
		tl.ws = true
		cfg := testkit.Config(t, upstream)
		cfg.Control.OpAMPURL = opampURL
		cfg.Control.PollEvery = config.Dur(pollEvery)
		cfg.Control.RollbackAfter = config.Dur(15 * time.Second)
		cfg.Fleet.Labels = map[string]string{"shop": tl.shop, "till": tl.name}
		cfg.Accept.Wait = config.Dur(300 * time.Millisecond)
		cfg.Update.TrustedKeys = []string{signer.PublicKey()}
		cfg.Update.Probation = config.Dur(updateProbation)
		return cfg
	})
}

// served is the version answering GET /receiptd/update.
func served(t *testing.T, base string) (string, bool) {
	t.Helper()
	var v struct {
		Version   string `json:"version"`
		Probation bool   `json:"onProbation"`
	}
	require.NoError(t, testkit.GetJSON(context.Background(), http.DefaultClient, base+"/receiptd/update", &v))
	return v.Version, v.Probation
}
