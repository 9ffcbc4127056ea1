package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council/keyring"
	"github.com/adaptio/adaptio/council/natsnode"
	"github.com/adaptio/adaptio/internal/poll"
)

// The deployment of the docs: an external NATS server that admits the
// keyring (adaptio nats --keys), and a Council given nothing but --nats and
// --keys: it authenticates with its own key and serves its operators.
func TestCouncilWithKeysOnAKeyedNATSServer(t *testing.T) {
	set, err := keyring.Generate(2)
	if err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "keys")
	if err := set.Write(keys); err != nil {
		t.Fatal(err)
	}
	cfg := testCouncilConfig(t)
	ns, err := natsnode.Start(natsnode.Options{Name: "n1", Listen: "127.0.0.1:0", StoreDir: t.TempDir(),
		Keys: &set.Ring, Group: natsnode.Group{Prefix: cfg.Prefix}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Shutdown) // after the Council's stop (cleanups run last first)
	url := ns.ClientURL()
	cfg.NATS, cfg.Listen, cfg.StateDir, cfg.HTTP, cfg.Keys = url, "", "", "", keys
	c := startCouncil(t, cfg)
	var out string
	poll.Until(t, "the Council answers its operator", 15*time.Second, func() bool {
		if stopped, err := c.stopped(); stopped {
			t.Fatalf("council stopped: %v", err)
		}
		out, err = runRoot(t, "council", "status", "--nats", url, "--prefix", cfg.Prefix, "--keys", keys)
		return err == nil
	})
	if !strings.Contains(out, "health: ok") {
		t.Fatalf("status:\n%s", out)
	}
	// An anonymous client is refused by the server itself.
	if _, err := runRoot(t, "council", "status", "--nats", url, "--prefix", cfg.Prefix); err == nil {
		t.Fatal("an anonymous operator reached a keyed NATS server")
	}
}
