package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/internal/poll"
)

// runRoot runs the adaptio command line args and returns its output.
func runRoot(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

// TestCouncilPinReleaseStatusThroughTheCLI runs "adaptio council" with a
// keyring and an audit log, and drives it with "adaptio council pin",
// "status", "shadow" and "release" signed by the keyring's operator key;
// a request signed by an I/O node's seed is refused.
func TestCouncilPinReleaseStatusThroughTheCLI(t *testing.T) {
	set, err := keyring.Generate(1)
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys")
	if err := set.Write(keys); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := testCouncilConfig(t)
	cfg.Listen, cfg.HTTP = addr, ""
	cfg.Keys = keys
	cfg.Operator.AuditLog = filepath.Join(t.TempDir(), "audit.jsonl")
	cfg.Operator.Guardrail = council.DefaultGuardrail()
	startCouncil(t, cfg)
	url := "nats://" + addr
	ctl := func(args ...string) (string, error) {
		return runRoot(t, append(args, "--nats", url, "--prefix", cfg.Prefix, "--keys", keys)...)
	}
	var out string
	poll.Until(t, "the Council answers", 10*time.Second, func() bool {
		out, err = ctl("council", "status")
		return err == nil
	})
	for _, want := range []string{"shadow false", "control window 1ms", "pins: none", "guardrail: on, 5% control, falls back when 10% worse over 600 rounds (4 rewards of each), until released", "health: ok"} {
		if !strings.Contains(out, want) {
			t.Fatalf("status:\n%s\nwant %q", out, want)
		}
	}
	if out, err = ctl("council", "pin", "--pattern", "ss", "--op", "write", "--window", "4ms", "--reason", "vendor advice"); err != nil ||
		!strings.Contains(out, "pinned SS/write at 4ms") || !strings.Contains(out, "pin: SS/write at 4ms") {
		t.Fatalf("pin: %v\n%s", err, out)
	}
	if out, err = ctl("council", "shadow", "on"); err != nil || !strings.Contains(out, "shadow mode on") {
		t.Fatalf("shadow on: %v\n%s", err, out)
	}
	if out, err = ctl("council", "pin", "--pattern", "ss", "--op", "write", "--window", "3ms"); err == nil || !strings.Contains(err.Error(), "not one of the Council's windows") {
		t.Fatalf("pin at 3ms: %v\n%s, want refused", err, out)
	}
	// Connected as the operator, signed by an I/O node: the Council refuses it.
	if _, err = runRoot(t, "council", "release", "--all", "--nats", url, "--prefix", cfg.Prefix,
		"--nkey-seed", filepath.Join(keys, keyring.OperatorSeed), "--operator-seed", filepath.Join(keys, keyring.NodeSeed(0))); err == nil ||
		!strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "not the operator's key") {
		t.Fatalf("a release signed by an I/O node's key: %v, want refused", err)
	}
	if out, err = ctl("council", "release", "--pattern", "SS", "--op", "write"); err != nil || !strings.Contains(out, "released SS/write") || !strings.Contains(out, "pins: none") {
		t.Fatalf("release: %v\n%s", err, out)
	}
	if _, err = ctl("council", "release", "--pattern", "SS"); err == nil || !strings.Contains(err.Error(), "--pattern and --op are required") {
		t.Fatalf("release without --op: %v", err)
	}
	audit, err := os.ReadFile(cfg.Operator.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(audit)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"action":"pin"`) || !strings.Contains(lines[0], set.Operator.PublicKey()) ||
		!strings.Contains(lines[0], `"reason":"vendor advice"`) || !strings.Contains(lines[1], `"action":"shadow-on"`) || !strings.Contains(lines[2], `"action":"release"`) {
		t.Fatalf("audit log:\n%s\nwant pin, shadow-on, release by the operator", audit)
	}
}
