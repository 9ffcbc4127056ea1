package listen

import (
	"errors"
	"strings"
	"testing"
)

func TestLocal(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:7070", true},
		{"127.0.0.2:7070", true},
		{"tcp:127.0.0.1:7070", true},
		{"localhost:4222", true},
		{"LOCALHOST:4222", true},
		{"[::1]:4222", true},
		{"[::ffff:127.0.0.1]:1", true},
		{"unix:/run/adaptio.sock", true},
		{"/run/adaptio.sock", true},
		{"0.0.0.0:7070", false},
		{":7070", false},
		{"[::]:7070", false},
		{"10.0.0.5:7070", false},
		{"ionode1:7070", false},
		{"localhost.example.org:7070", false},
		{"127.0.0.1", false}, // no port: malformed
		{"", false},
	} {
		if got := Local(tt.addr); got != tt.want {
			t.Errorf("Local(%q) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestRequire(t *testing.T) {
	for _, tt := range []struct {
		name                    string
		addr                    string
		authenticated, insecure bool
		refused                 bool
	}{
		{"all interfaces, no auth", "0.0.0.0:7070", false, false, true},
		{"empty host, no auth", ":7070", false, false, true},
		{"all interfaces, auth", "0.0.0.0:7070", true, false, false},
		{"all interfaces, insecure", "0.0.0.0:7070", false, true, false},
		{"loopback, no auth", "127.0.0.1:7070", false, false, false},
		{"unix socket, no auth", "unix:/tmp/s", false, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := Require("forward --listen", tt.addr, tt.authenticated, tt.insecure)
			if (err != nil) != tt.refused {
				t.Fatalf("Require(%q, auth %v, insecure %v) = %v, want refused %v", tt.addr, tt.authenticated, tt.insecure, err, tt.refused)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrUnauthenticated) {
				t.Errorf("error %v does not wrap ErrUnauthenticated", err)
			}
			for _, want := range []string{"forward --listen", tt.addr, "--token-file", "--insecure"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
		})
	}
	if Insecure("127.0.0.1:1", false) || Insecure("0.0.0.0:1", true) || !Insecure("0.0.0.0:1", false) {
		t.Error("Insecure: wrong answer")
	}
}
