package posix

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The master's chunk servers, from real "mfscli -SCS -p -n" output, come
// sorted by address (here given out of order), duplicates once.
func TestParseMooseFSServers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "mfscli-scs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(data)), "\n")
	shuffled := lines[3] + "\n" + lines[1] + lines[0] + lines[2] + lines[0]
	for _, in := range []string{string(data), shuffled} {
		got, err := parseMooseFSServers([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"10.213.0.2:9422", "10.213.0.3:9422", "10.213.0.4:9422", "10.213.0.5:9422"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("servers %q, want %q", got, want)
		}
	}
	for _, in := range []string{"", "metadata servers:\t10.0.0.1\n", "chunk servers:\tnot-an-ip\t9422\n"} {
		if _, err := parseMooseFSServers([]byte(in)); !errors.Is(err, ErrMooseFS) {
			t.Errorf("parse %q: %v, want ErrMooseFS", in, err)
		}
	}
}

// The master's address comes from the MooseFS mount's source, escaped as
// the kernel writes it; a deeper mount that is not MooseFS has none.
func TestMooseFSMaster(t *testing.T) {
	const mi = `27 1 0:25 / / rw,relatime - ext4 /dev/vda rw
48 27 0:39 / /data/mfs/mnt rw,nosuid,nodev,relatime - fuse mfs\04310.213.0.1:9421 rw,user_id=0,group_id=0,allow_other
49 48 0:40 / /data/mfs/mnt/tmp rw - tmpfs tmpfs rw
`
	for _, tt := range []struct{ path, want string }{
		{"/data/mfs/mnt", "10.213.0.1:9421"},
		{"/data/mfs/mnt/run/x", "10.213.0.1:9421"},
		{"/data/mfs/mnt/tmp/x", ""},
		{"/data/mfs/mntx", ""},
		{"/home", ""},
	} {
		if got := mooseFSMaster(strings.NewReader(mi), tt.path); got != tt.want {
			t.Errorf("master of %s = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// The decoders of mfscli output and of the mount table never panic, and
// what parseMooseFSServers accepts is sorted, distinct address:port.
func FuzzParseMooseFSServers(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "mfscli-scs.txt"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("48 27 0:39 / /m rw - fuse mfs\\04310.0.0.1:9421 rw\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = mooseFSMaster(strings.NewReader(string(data)), "/m/x")
		addrs, err := parseMooseFSServers(data)
		if err != nil {
			if !errors.Is(err, ErrMooseFS) {
				t.Fatalf("error %v does not wrap ErrMooseFS", err)
			}
			return
		}
		for i := 1; i < len(addrs); i++ {
			if addrs[i] == addrs[i-1] {
				t.Fatalf("duplicate %s in %q", addrs[i], addrs)
			}
		}
	})
}
