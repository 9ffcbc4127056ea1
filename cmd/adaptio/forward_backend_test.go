package main

import (
	"errors"
	"testing"

	"github.com/adaptio/adaptio/backend/posix"
)

// --layout reaches the posix backend: an unknown kind is refused by name,
// a known one opens (the backend's own kind, "posix", is not taken for it).
func TestOpenBackendPassesTheLayoutKind(t *testing.T) {
	dir := t.TempDir()
	if _, err := openBackend("posix:"+dir, "64K", 4, 0, nil, "nosuchkind", 0, posix.MooseFSOptions{}); !errors.Is(err, posix.ErrUnknownLayout) {
		t.Fatalf("--layout nosuchkind: %v, want ErrUnknownLayout", err)
	}
	b, err := openBackend("posix:"+dir, "64K", 4, 0, nil, posix.LayoutStatic, 0, posix.MooseFSOptions{})
	if err != nil {
		t.Fatalf("--layout %s: %v", posix.LayoutStatic, err)
	}
	b.Close()
}
