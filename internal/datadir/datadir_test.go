package datadir

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirHonoursEnv(t *testing.T) {
	d := t.TempDir()
	t.Setenv(Env, d)
	if got, ok := Dir(); got != d || !ok {
		t.Errorf("Dir() = %q, %v; want %q, true", got, ok, d)
	}
	if got, want := Path("forge", "x.csv"), filepath.Join(d, "forge", "x.csv"); got != want {
		t.Errorf("Path = %q, want %q", got, want)
	}
	missing := filepath.Join(d, "absent")
	t.Setenv(Env, missing)
	if got, ok := Dir(); got != missing || ok {
		t.Errorf("Dir() = %q, %v; want %q, false", got, ok, missing)
	}
}

func TestDirFindsSharedDataAbove(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "shared", "data")
	work := filepath.Join(root, "repo", "pkg", "sub")
	for _, d := range []string{data, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(Env, "")
	t.Chdir(work)
	got, ok := Dir()
	if !ok {
		t.Fatalf("Dir() found nothing from %s", work)
	}
	if g, _ := filepath.EvalSymlinks(got); g != mustEval(t, data) {
		t.Errorf("Dir() = %q, want %q", got, data)
	}
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	e, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// fetchData runs scripts/fetch-data with args and returns its exit code,
// standard output and standard error.
func fetchData(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "fetch-data"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// TestFetchDataArguments checks the download script's argument handling
// without a network: help, the listing, a dry run into a chosen directory
// or $ADAPTIO_DATA, and refusals of bad arguments.
func TestFetchDataArguments(t *testing.T) {
	code, out, _ := fetchData(t, nil, "--help")
	if code != 0 || !strings.Contains(out, "ADAPTIO_DATA") {
		t.Errorf("--help: exit %d, output %q", code, out)
	}

	code, out, _ = fetchData(t, nil, "--list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 60 {
		t.Fatalf("--list: exit %d, %d lines", code, len(lines))
	}
	for _, l := range lines {
		dst, url, ok := strings.Cut(l, "\t")
		if !ok || !(strings.HasPrefix(dst, "forge/") || strings.HasPrefix(dst, "darshan/")) ||
			!strings.HasPrefix(url, "https://raw.githubusercontent.com/") {
			t.Errorf("--list line %q: want a forge/ or darshan/ path, a tab and a raw GitHub URL", l)
		}
	}
	// Every file the FORGE reader looks for is in the set.
	if !strings.Contains(out, "forge/marenostrum-4-results.csv\t") {
		t.Error("--list lacks forge/marenostrum-4-results.csv")
	}

	dir := t.TempDir()
	code, out, _ = fetchData(t, nil, "--dry-run", dir)
	if code != 0 || !strings.Contains(out, filepath.Join(dir, "forge", "marenostrum-4-results.csv")+" <- ") {
		t.Errorf("--dry-run DIR: exit %d, output starts %q", code, first(out))
	}
	code, out, _ = fetchData(t, []string{Env + "=" + dir}, "--dry-run")
	if code != 0 || !strings.HasPrefix(out, dir+"/") {
		t.Errorf("--dry-run with %s: exit %d, output starts %q", Env, code, first(out))
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a dry run wrote %d entries into %s", len(entries), dir)
	}

	for _, args := range [][]string{{"--bogus"}, {"a", "b"}, {"--", "a", "b"}} {
		code, _, stderr := fetchData(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, "--help") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a pointer to --help", args, code, stderr)
		}
	}
}

// TestFetchDataManifestMatchesSharedData runs the script over the data
// directory when it is present: every file is already there with the
// checksum the manifest pins, so nothing is downloaded.
func TestFetchDataManifestMatchesSharedData(t *testing.T) {
	dir, ok := Dir()
	if !ok {
		t.Skipf("no data directory (%s unset and no ../shared/data): scripts/fetch-data downloads it", Env)
	}
	if _, err := os.Stat(filepath.Join(dir, "forge", "marenostrum-4-results.csv")); err != nil {
		t.Skipf("%v: an incomplete data directory", err)
	}
	code, out, stderr := fetchData(t, nil, dir)
	if code != 0 || !strings.Contains(out, " 0 fetched, ") {
		t.Errorf("fetch-data %s: exit %d\nstdout %s\nstderr %s", dir, code, out, stderr)
	}
}

func first(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
