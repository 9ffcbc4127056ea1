package fusemount_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/fusemount"
	"github.com/adaptio/adaptio/fwd/client"
)

// A bad mount point is refused before anything is mounted, with its name.
func TestMountPointCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := &client.Client{} // never used: the check comes first
	if _, err := fusemount.Mount(file, c, fusemount.Options{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("mount over a file: %v, want a refusal", err)
	}
	missing := filepath.Join(dir, "nonexistent", "mnt")
	if _, err := fusemount.Mount(missing, c, fusemount.Options{}); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("mount on a missing directory: %v, want ErrNotExist naming it", err)
	}
}
