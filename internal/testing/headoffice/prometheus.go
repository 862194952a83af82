package headoffice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/receiptd/receiptd/internal/testing/harness"
)

// DebianDir is where packaging/monitoring/check.sh unpacks Debian's
// prometheus package (without installing it); PROMTOOL_DIR overrides.
const DebianDir = "/tmp/receiptd-promtool"

// Binary returns the prometheus server binary: from PATH, else the one
// check.sh unpacked.
func Binary() (string, error) {
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	dir := os.Getenv("PROMTOOL_DIR")
	if dir == "" {
		dir = DebianDir
	}
	p := filepath.Join(dir, "usr", "bin", "prometheus")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no prometheus binary on PATH nor at %s (packaging/monitoring/check.sh unpacks Debian's): %w", p, err)
	}
	return p, nil
}

// Options configure a head office.
type Options struct {
	// Dir holds prometheus.yml, the rule files and the storage (tsdb);
	// a restart on the same Dir keeps what was stored.
	Dir string
	// Rules are rule files' contents, by file name, written into Dir.
	Rules map[string][]byte
	// Eval is the rule evaluation interval; zero: 1s.
	Eval time.Duration
	// OutOfOrder is storage.tsdb.out_of_order_time_window: how late a
	// pushed sample may arrive; zero: 1h.
	OutOfOrder time.Duration
}

// Server is a running Prometheus with its remote-write receiver on.
type Server struct {
	bin  string
	o    Options
	addr string // host:port, kept across restarts
	cmd  *exec.Cmd
	done chan error
}

// Start writes the configuration and starts Prometheus on a free loopback
// port, waiting until it is ready.
func Start(ctx context.Context, bin string, o Options) (*Server, error) {
	if o.Eval == 0 {
		o.Eval = time.Second
	}
	if o.OutOfOrder == 0 {
		o.OutOfOrder = time.Hour
	}
	addr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, o: o, addr: addr}
	if err := s.writeConfig(); err != nil {
		return nil, err
	}
	return s, s.Restart(ctx)
}

func (s *Server) writeConfig() error {
	var files []string
	for name, data := range s.o.Rules {
		if err := os.WriteFile(filepath.Join(s.o.Dir, name), data, 0o644); err != nil {
			return fmt.Errorf("head office: %w", err)
		}
		files = append(files, strconv.Quote(name))
	}
	yml := fmt.Sprintf("global: {evaluation_interval: %s}\nrule_files: [%s]\nstorage:\n  tsdb:\n    out_of_order_time_window: %s\n",
		promDuration(s.o.Eval), strings.Join(files, ", "), promDuration(s.o.OutOfOrder))
	if err := os.WriteFile(filepath.Join(s.o.Dir, "prometheus.yml"), []byte(yml), 0o644); err != nil {
		return fmt.Errorf("head office: %w", err)
	}
	return nil
}

func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// Restart starts the stopped server again on the same address and
// storage, and waits until it is ready.
func (s *Server) Restart(ctx context.Context) error {
	log, err := os.OpenFile(filepath.Join(s.o.Dir, "prometheus.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("head office: %w", err)
	}
	defer log.Close()
	s.cmd = exec.Command(s.bin, "--config.file="+filepath.Join(s.o.Dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(s.o.Dir, "tsdb"), "--web.listen-address="+s.addr,
		"--web.enable-remote-write-receiver", "--log.level=warn")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("head office: start prometheus: %w", err)
	}
	s.done = make(chan error, 1)
	go func(cmd *exec.Cmd, done chan error) { done <- cmd.Wait() }(s.cmd, s.done)
	for {
		if resp, err := http.Get(s.URL() + "/-/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-s.done:
			return fmt.Errorf("head office: prometheus exited: %v; see %s", err, filepath.Join(s.o.Dir, "prometheus.log"))
		case <-ctx.Done():
			_ = s.Stop()
			return fmt.Errorf("head office: prometheus not ready: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Stop ends the server (SIGTERM, then a kill after 30s) and waits.
func (s *Server) Stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = harness.AskToStop(s.cmd.Process)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return nil
}

// PID is the running server's process id (0 when stopped).
func (s *Server) PID() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.addr }

// WriteURL is the remote-write endpoint tills push to.
func (s *Server) WriteURL() string { return s.URL() + "/api/v1/write" }

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
}

// Query evaluates an instant query at time at (zero: now).
func (s *Server) Query(ctx context.Context, q string, at time.Time) ([]Sample, error) {
	v := url.Values{"query": {q}}
	if !at.IsZero() {
		v.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64))
	}
	var res struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := s.getJSON(ctx, "/api/v1/query?"+v.Encode(), &res); err != nil {
		return nil, err
	}
	if res.Status != "success" || res.Data.ResultType != "vector" {
		return nil, fmt.Errorf("query %s: %s %s (%s)", q, res.Status, res.Error, res.Data.ResultType)
	}
	out := make([]Sample, 0, len(res.Data.Result))
	for _, r := range res.Data.Result {
		str, _ := r.Value[1].(string)
		f, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %s: value %v: %w", q, r.Value[1], err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: f})
	}
	return out, nil
}

// Alert is one alert the server holds.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// Firing returns the alerts in state firing.
func (s *Server) Firing(ctx context.Context) ([]Alert, error) {
	var res struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	if err := s.getJSON(ctx, "/api/v1/alerts", &res); err != nil {
		return nil, err
	}
	var out []Alert
	for _, a := range res.Data.Alerts {
		if a.State == "firing" {
			out = append(out, a)
		}
	}
	return out, nil
}

// Usage is the server's own CPU time (seconds) and resident memory
// (bytes), from its /metrics.
func (s *Server) Usage(ctx context.Context) (cpu, rss float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("head office metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range bytes.Split(body, []byte("\n")) {
		name, val, ok := strings.Cut(string(line), " ")
		if !ok {
			continue
		}
		switch name {
		case "process_cpu_seconds_total":
			cpu, _ = strconv.ParseFloat(val, 64)
		case "process_resident_memory_bytes":
			rss, _ = strconv.ParseFloat(val, 64)
		}
	}
	if rss == 0 {
		return 0, 0, errors.New("head office metrics: no process_resident_memory_bytes")
	}
	return cpu, rss, nil
}

func (s *Server) getJSON(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("head office %s: %w", path, err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("head office %s: HTTP %d: %w", path, resp.StatusCode, err)
	}
	return nil
}
