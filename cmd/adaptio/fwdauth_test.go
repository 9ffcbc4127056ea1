package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runAdaptio runs the root command with args; its context ends after d,
// so a server that does start stops on its own.
func runAdaptio(t *testing.T, d time.Duration, args ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := newRootCmd()
	cmd.SetArgs(args)
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	return cmd.ExecuteContext(ctx)
}

// TestListenBeyondLoopbackNeedsAuth: every server command refuses an
// address on every interface without authentication, naming the flag
// that lets it start, and starts with that flag.
func TestListenBeyondLoopbackNeedsAuth(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "export")
	if err := os.Mkdir(export, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		refused []string
		want    string // in the refusal
		started []string
	}{
		{"forward", []string{"forward", "--backend", "posix:" + export, "--listen", "0.0.0.0:0"}, "--token-file",
			[]string{"forward", "--backend", "posix:" + export, "--listen", "0.0.0.0:0", "--token-file", token}},
		{"nats", []string{"nats", "--listen", "0.0.0.0:0", "--store", filepath.Join(dir, "nats")}, "--keys",
			[]string{"nats", "--listen", "0.0.0.0:0", "--store", filepath.Join(dir, "nats"), "--insecure"}},
		{"council", []string{"council", "--listen", "0.0.0.0:0", "--state-dir", "", "--http", ""}, "--allow-nkey",
			[]string{"council", "--listen", "0.0.0.0:0", "--state-dir", "", "--http", "", "--insecure"}},
		{"pfs", []string{"pfs", "--dir", filepath.Join(dir, "pfs"), "--servers", "1", "--listen", "0.0.0.0:0"}, "--insecure",
			[]string{"pfs", "--dir", filepath.Join(dir, "pfs"), "--servers", "1", "--listen", "0.0.0.0:0", "--insecure"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := runAdaptio(t, 5*time.Second, tt.refused...)
			if err == nil || !strings.Contains(err.Error(), "beyond loopback") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("%v: %v, want a refusal naming %s", tt.refused, err, tt.want)
			}
			if err := runAdaptio(t, 300*time.Millisecond, tt.started...); err != nil {
				t.Fatalf("%v: %v, want it to start", tt.started, err)
			}
		})
	}
	if err := runAdaptio(t, 5*time.Second, "mount", "--token-file", filepath.Join(dir, "missing"), filepath.Join(dir, "mnt")); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("mount with a missing token file: %v, want an error naming --token-file", err)
	}
}
