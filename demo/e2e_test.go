package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// repoRoot walks up from the working directory to the module root.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// browserCheck runs e2e/check.mjs against a dashboard URL and a report file
// in headless Chromium; it skips when Chromium, node or node_modules are absent.
func browserCheck(t *testing.T, dashURL, reportFile string) map[string]any {
	t.Helper()
	chromium := "/usr/bin/chromium"
	if _, err := os.Stat(chromium); err != nil {
		t.Skip("browser test skipped: /usr/bin/chromium is absent (apt-get install chromium)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("browser test skipped: node is not installed")
	}
	dir := filepath.Join(repoRoot(t), "e2e")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "playwright-core")); err != nil {
		t.Skip("browser test skipped: e2e/node_modules is absent (run: cd e2e && npm ci)")
	}
	args := []string{"check.mjs", "--chromium", chromium}
	if dashURL != "" {
		args = append(args, "--dashboard", dashURL)
	}
	if reportFile != "" {
		args = append(args, "--report", reportFile)
	}
	if shots := os.Getenv("ADAPTIO_SCREENSHOTS"); shots != "" {
		args = append(args, "--shots", shots)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("browser check: %v; stdout %q stderr %q", runErr, stdout.String(), stderr.String())
	}
	if runErr != nil {
		t.Fatalf("browser check failed: %v: %s", out["error"], stdout.String())
	}
	return out
}

// TestDashboardInBrowser runs a paced simulated demo and checks its
// dashboard in headless Chromium (no request leaves localhost, the charts
// fill and keep updating), then the report page. Set ADAPTIO_SCREENSHOTS to
// a directory to keep PNGs of both.
func TestDashboardInBrowser(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, "e2e", "node_modules", "playwright-core")); err != nil {
		t.Skip("browser test skipped: e2e/node_modules is absent (run: cd e2e && npm ci)")
	}
	if _, err := os.Stat("/usr/bin/chromium"); err != nil {
		t.Skip("browser test skipped: /usr/bin/chromium is absent (apt-get install chromium)")
	}
	// Many iterations at a watchable pace: the test stops the run (Ctrl-C) once the browser has seen it.
	cfg := Config{Sim: true, Iterations: 500, PhaseBytes: 256 << 20, StateDir: t.TempDir(), Mix: true, Compare: 1,
		Report: filepath.Join(t.TempDir(), "report.html"), Pace: 8, HTTP: "127.0.0.1:0", Seed: 11}
	urls := make(chan string, 1)
	cfg.OnDashboard = func(u string) { urls <- u }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("demo ended before its dashboard listened: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("dashboard did not start within 20 s")
	}
	out := browserCheck(t, url, "")
	t.Logf("dashboard: %v", out["dashboard"])
	cancel() // Ctrl-C: the report is still written
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out = browserCheck(t, "", cfg.Report)
	t.Logf("report: %v", out["report"])
}
