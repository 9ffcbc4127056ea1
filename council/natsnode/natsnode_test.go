package natsnode

import (
	"errors"
	"testing"
)

func TestOptionsRefusedWithAReason(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"no store", Options{}},
		{"bad client address", Options{StoreDir: dir, Listen: "4222"}},
		{"routes without a cluster address", Options{StoreDir: dir, Routes: []string{"nats-route://a:6222"}}},
		{"clustered without a name", Options{StoreDir: dir, ClusterListen: "127.0.0.1:6222"}},
		{"cluster port 0", Options{StoreDir: dir, Name: "n1", ClusterListen: "127.0.0.1:0"}},
		{"route not a nats-route URL", Options{StoreDir: dir, Name: "n1", ClusterListen: "127.0.0.1:6222", Routes: []string{"http://a:6222"}}},
	} {
		if _, err := tc.o.ServerOptions(); !errors.Is(err, ErrBadOptions) {
			t.Errorf("%s: %v, want ErrBadOptions", tc.name, err)
		}
	}
}

func TestSingleServerStartsWithJetStream(t *testing.T) {
	s, err := Start(Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if !s.JetStreamEnabled() {
		t.Error("JetStream is not enabled")
	}
}
