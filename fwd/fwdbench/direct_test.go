package fwdbench_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/fwd/fwdbench"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/workload"
)

// Without Keep a direct run leaves the directory as it found it.
func TestRunDirectRemovesFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, layout := range []workload.Layout{workload.FilePerProcess, workload.Shared} {
		p := workload.Pattern{Processes: 3, Layout: layout, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 4096, TotalBytes: 3 * 2 * 4096}
		if _, err := fwdbench.RunDirect(context.Background(), dir, p, fwdbench.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Name() != "other" {
		t.Fatalf("directory holds %v, want just other", ents)
	}
}

// A byte changed on disk between write and read-back fails with ErrVerify,
// and so does a file cut short.
func TestVerifyDirectDetectsCorruption(t *testing.T) {
	tests := []struct {
		name   string
		damage func(f *os.File) error
	}{
		{"flipped byte", func(f *os.File) error { _, err := f.WriteAt([]byte{0xff ^ fillByte(5000)}, 5000); return err }},
		{"short file", func(f *os.File) error { return f.Truncate(7*4096 + 100) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := workload.Pattern{Processes: 2, Layout: workload.Shared, Spatiality: workload.Strided, Op: rw.Write, RequestSize: 4096, TotalBytes: 8 * 4096}
			if _, err := fwdbench.RunDirect(context.Background(), dir, p, fwdbench.Options{Keep: true, NoVerify: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := fwdbench.VerifyDirect(context.Background(), dir, p, fwdbench.Options{}); err != nil {
				t.Fatalf("verify before damage: %v", err)
			}
			f, err := os.OpenFile(fwdbench.FileName(dir, p, 0), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.damage(f); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if _, err := fwdbench.VerifyDirect(context.Background(), dir, p, fwdbench.Options{}); !errors.Is(err, fwdbench.ErrVerify) {
				t.Fatalf("verify after damage: got %v, want ErrVerify", err)
			}
		})
	}
}

// fillByte is byte off of file 0's content with seed 0.
func fillByte(off int64) byte {
	b := make([]byte, 1)
	fwdbench.Fill(b, 0, 0, off)
	return b[0]
}

func TestRunDirectBadDirectory(t *testing.T) {
	p := workload.Pattern{Processes: 2, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 4096, TotalBytes: 2 * 4096}
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := fwdbench.RunDirect(context.Background(), missing, p, fwdbench.Options{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("missing directory: got %v, want ErrNotExist naming %s", err, missing)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the run created %s", missing)
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := fwdbench.RunDirect(context.Background(), file, p, fwdbench.Options{}); !errors.Is(err, fwdbench.ErrNotDir) {
		t.Fatalf("regular file as directory: got %v, want ErrNotDir", err)
	}
	if _, err := fwdbench.RunDirect(context.Background(), missing, workload.Pattern{}, fwdbench.Options{}); !errors.Is(err, workload.ErrBadPattern) {
		t.Fatalf("invalid pattern: got %v, want ErrBadPattern", err)
	}
}

// A cancelled context stops a direct run with the context's error.
func TestRunDirectCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := workload.Pattern{Processes: 2, Layout: workload.Shared, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: 4096, TotalBytes: 2 * 4096}
	if _, err := fwdbench.RunDirect(ctx, t.TempDir(), p, fwdbench.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// With NoFill each process writes its first request's content in every
// request (the write phase times the I/O alone), and the read phase reads
// it back without checking.
func TestNoFill(t *testing.T) {
	dir := t.TempDir()
	const size = 4096
	p := workload.Pattern{Processes: 2, Layout: workload.FilePerProcess, Spatiality: workload.Contiguous, Op: rw.Write, RequestSize: size, TotalBytes: 2 * 4 * size}
	res, err := fwdbench.RunDirect(context.Background(), dir, p, fwdbench.Options{NoFill: true, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Write.Bytes != p.TotalBytes || res.Verified || res.Read.Bytes != p.TotalBytes {
		t.Fatalf("write %d bytes, read %d, verified %v; want %d each, not verified (nothing was checked)", res.Write.Bytes, res.Read.Bytes, res.Verified, p.TotalBytes)
	}
	for proc := 0; proc < p.Processes; proc++ {
		file, off := p.Request(proc, 0)
		first := make([]byte, size)
		fwdbench.Fill(first, 0, file, off)
		data, err := os.ReadFile(filepath.Join(dir, fwdbench.FileName("", p, file)))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != 4*size {
			t.Fatalf("file %d: %d bytes, want %d", file, len(data), 4*size)
		}
		for i := 0; i < 4; i++ {
			if string(data[i*size:(i+1)*size]) != string(first) {
				t.Fatalf("file %d, request %d: not the first request's content", file, i)
			}
		}
	}
}
