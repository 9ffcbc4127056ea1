package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesWholeOrNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "old\n"); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half of the new")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "old\n" {
		t.Fatalf("after a failed write: %q (%v), want the old content", b, err)
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("content %q, want new", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only the file (no temporary left)", len(ents))
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir"), func(io.Writer) error { return nil }); err == nil {
		t.Error("write into a missing directory succeeded")
	}
}

// The temporary file is flushed, whole, before it takes the name, and the
// directory after: a flush that fails leaves the old file; a replaced file
// keeps its mode.
func TestWriteFlushesFileThenDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	oldFile, oldDir := syncFile, syncDir
	t.Cleanup(func() { syncFile, syncDir = oldFile, oldDir })

	var steps []string
	syncFile = func(f *os.File) error {
		b, err := os.ReadFile(f.Name())
		if err != nil {
			return err
		}
		if _, err := os.Stat(path); err != nil {
			return err
		}
		cur, _ := os.ReadFile(path)
		steps = append(steps, "file "+string(b)+" while path holds "+string(cur))
		return oldFile(f)
	}
	syncDir = func(d string) error {
		cur, _ := os.ReadFile(path)
		steps = append(steps, "dir "+filepath.Base(d)+" after path holds "+string(cur))
		return oldDir(d)
	}
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "new whole"); return err }); err != nil {
		t.Fatal(err)
	}
	want := []string{"file new whole while path holds old", "dir " + filepath.Base(dir) + " after path holds new whole"}
	if len(steps) != 2 || steps[0] != want[0] || steps[1] != want[1] {
		t.Fatalf("steps %q, want %q", steps, want)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode of the replaced file: %v (%v), want 0600 kept", fi.Mode().Perm(), err)
	}

	eio := errors.New("injected EIO")
	syncFile = func(*os.File) error { return eio }
	if err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "lost"); return err }); !errors.Is(err, eio) {
		t.Fatalf("failed flush: %v, want the injected error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new whole" {
		t.Fatalf("after a failed flush: %q, want the previous content", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries after a failed flush, want the file alone", len(ents))
	}

	syncFile = oldFile
	syncDir = func(string) error { return eio }
	err := Write(path, func(w io.Writer) error { _, err := io.WriteString(w, "renamed"); return err })
	if !errors.Is(err, eio) {
		t.Fatalf("failed directory flush: %v, want the injected error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "renamed" {
		t.Fatalf("after a failed directory flush: %q, want the new content in place", b)
	}
	fresh := filepath.Join(dir, "fresh")
	syncDir = oldDir
	if err := Write(fresh, func(w io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(fresh); fi.Mode().Perm() != DefaultMode {
		t.Errorf("new file mode %v, want %v", fi.Mode().Perm(), DefaultMode)
	}
}
