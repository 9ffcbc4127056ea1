package posix_test

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/backend/posix"
)

var updateMooseFS = flag.Bool("update-moosefs", false, "rewrite the golden files under testdata/mfsfileinfo")

// Real mfsfileinfo output (MooseFS 3.0.117, captured from the cluster of
// scripts/moosefs-cluster) parses to the reviewed golden JSON beside it:
// several chunks on several servers, a hole, an empty file, two files, two
// copies, checksums (-c), a signature (-s), and a server down.
func TestParseMooseFSFileInfoGolden(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "mfsfileinfo", "*.txt"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, in := range ins {
		t.Run(strings.TrimSuffix(filepath.Base(in), ".txt"), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			files, err := posix.ParseMooseFSFileInfo(data)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(files, "", "  ")
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".txt") + ".golden"
			if *updateMooseFS {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update-moosefs)", err)
			}
			if string(got) != string(want) {
				t.Errorf("parse of %s:\ngot  %s\nwant %s", in, got, want)
			}
		})
	}
}

// Which server holds each chunk, from real output.
func TestMooseFSChunkServer(t *testing.T) {
	for _, tt := range []struct {
		file string
		want []string // per chunk; "" for none
	}{
		{"four-chunks.txt", []string{"10.213.0.5:9422", "10.213.0.4:9422", "10.213.0.3:9422", "10.213.0.2:9422"}},
		{"hole.txt", []string{"10.213.0.3:9422", "", "10.213.0.5:9422"}},
		{"two-copies.txt", []string{"10.213.0.2:9422"}},
		{"server-down.txt", []string{""}},
		{"empty.txt", nil},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "mfsfileinfo", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		files, err := posix.ParseMooseFSFileInfo(data)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range files[0].Chunks {
			a, _ := c.Server()
			got = append(got, a)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: servers %q, want %q", tt.file, got, tt.want)
		}
	}
	c := posix.MooseFSChunk{Copies: []posix.MooseFSCopy{{Addr: "10.0.0.1:9422", Status: "MARKED FOR REMOVAL"}, {Addr: "10.0.0.2:9422", Status: "VALID"}}}
	if a, ok := c.Server(); !ok || a != "10.0.0.2:9422" {
		t.Errorf("Server() = %q, %v; want the VALID copy 10.0.0.2:9422", a, ok)
	}
}

// Output that is not chunk information is refused with a message quoting
// the line.
func TestParseMooseFSFileInfoErrors(t *testing.T) {
	for _, tt := range []struct {
		name, in, want string
	}{
		{"empty", "", "no file"},
		{"not root", "mnt/f: Operation not permitted\n", "not a file name"},
		{"no master", "can't connect to master (.masterinfo): ENOTCONN (Transport endpoint is not connected)\n", "not a file name"},
		{"chunk first", "\tchunk 0: empty\n", "before any file name"},
		{"copy first", "f:\n\t\tcopy 1: 10.0.0.1:9422\n", "before any chunk"},
		{"bad index", "f:\n\tchunk x: empty\n", "chunk index"},
		{"huge index", "f:\n\tchunk 99999999999: empty\n", "chunk index"},
		{"order", "f:\n\tchunk 1: empty\n\tchunk 0: empty\n", "chunk 0 after chunk 1"},
		{"bad hex", "f:\n\tchunk 0: 00Z0_00000001 / (id:1 ver:1)\n", "chunk id"},
		{"id mismatch", "f:\n\tchunk 0: 0000000000000001_00000001 / (id:2 ver:1)\n", "does not repeat"},
		{"bad addr", "f:\n\tchunk 0: 0000000000000001_00000001 / (id:1 ver:1)\n\t\tcopy 1: server9:9422\n", "chunk server address"},
		{"no port", "f:\n\tchunk 0: 0000000000000001_00000001 / (id:1 ver:1)\n\t\tcopy 1: 10.0.0.1\n", "chunk server address"},
		{"copy number", "f:\n\tchunk 0: 0000000000000001_00000001 / (id:1 ver:1)\n\t\tcopy 2: 10.0.0.1:9422\n", "copy number"},
		{"copy of empty", "f:\n\tchunk 0: empty\n\t\tcopy 1: 10.0.0.1:9422\n", "empty chunk"},
		{"unknown", "f:\n\tsomething else\n", "unknown line"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := posix.ParseMooseFSFileInfo([]byte(tt.in))
			if !errors.Is(err, posix.ErrMooseFSInfo) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want ErrMooseFSInfo about %q", err, tt.want)
			}
		})
	}
}

// formatMooseFSFileInfo prints files as mfsfileinfo does (the fields the
// parser keeps).
func formatMooseFSFileInfo(files []posix.MooseFSFile) string {
	var b strings.Builder
	for _, f := range files {
		fmt.Fprintf(&b, "%s:\n", f.Name)
		if len(f.Chunks) == 0 {
			b.WriteString("\tno chunks - empty file\n")
		}
		for _, c := range f.Chunks {
			if c.Empty {
				fmt.Fprintf(&b, "\tchunk %d: empty\n", c.Index)
				continue
			}
			fmt.Fprintf(&b, "\tchunk %d: %016X_%08X / (id:%d ver:%d)\n", c.Index, c.ID, c.Version, c.ID, c.Version)
			for i, cp := range c.Copies {
				fmt.Fprintf(&b, "\t\tcopy %d: %s", i+1, cp.Addr)
				if cp.Status != "" {
					fmt.Fprintf(&b, " (status:%s)", cp.Status)
				}
				b.WriteString("\n")
			}
			if len(c.Copies) == 0 {
				b.WriteString("\t\tno valid copies !!!\n")
			}
		}
	}
	return b.String()
}

// The parser never panics, and what it accepts prints back (as
// mfsfileinfo would) to text that parses to the same files.
func FuzzParseMooseFSFileInfo(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "mfsfileinfo", "*.txt"))
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("f:\n\tchunk 0: empty\n\tchunk 3: 0000000000000001_00000001 / (id:1 ver:1)\n\t\tcopy 1: 10.0.0.1:9422 - can't get checksum\n"))
	f.Add([]byte("a:b::\n\tno chunks - empty file\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := posix.ParseMooseFSFileInfo(data)
		if err != nil {
			if !errors.Is(err, posix.ErrMooseFSInfo) {
				t.Fatalf("error %v does not wrap ErrMooseFSInfo", err)
			}
			return
		}
		text := formatMooseFSFileInfo(files)
		again, err := posix.ParseMooseFSFileInfo([]byte(text))
		if err != nil {
			t.Fatalf("reprinted output does not parse: %v\n%s", err, text)
		}
		if !reflect.DeepEqual(files, again) {
			t.Fatalf("reparse differs:\n%+v\n%+v", files, again)
		}
	})
}
