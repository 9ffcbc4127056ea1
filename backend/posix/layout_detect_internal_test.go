package posix

import (
	"strings"
	"testing"
)

// Lustre by its statfs type; MooseFS by the mount table's entry: the
// type mfsmount registers (fuse.mfs, fuse.moosefs) or, as Debian's
// mfsmount 3.0 mounts, type fuse from the source mfs#HOST:PORT.
func TestDetectKind(t *testing.T) {
	tests := []struct {
		magic int64
		m     mountEntry
		want  string
	}{
		{0x0BD00BD0, mountEntry{}, LayoutLustre},
		{0x65735546, mountEntry{"fuse.mfs", "mfs#master:9421"}, LayoutMooseFS},
		{0x65735546, mountEntry{"fuse.moosefs", "mfs#master:9421"}, LayoutMooseFS},
		{0x65735546, mountEntry{"fuse", "mfs#10.213.0.1:9421"}, LayoutMooseFS},
		{0x65735546, mountEntry{"fuse", "sshfs#u@h:/"}, LayoutStatic},
		{0x65735546, mountEntry{"fuse", "adaptio"}, LayoutStatic},
		{0x65735546, mountEntry{"fuse.sshfs", "u@h:/"}, LayoutStatic},
		{0x01021994, mountEntry{"tmpfs", "mfs#x:1"}, LayoutStatic},
		{0xef53, mountEntry{"ext4", "/dev/vda"}, LayoutStatic},
	}
	for _, tt := range tests {
		if got, why := detectKind(tt.magic, tt.m); got != tt.want || why == "" {
			t.Errorf("detectKind(%#x, %+v) = %q, %q; want %q", tt.magic, tt.m, got, why, tt.want)
		}
	}
}

// Mount table entries as the kernel lists them: the MooseFS line is
// Debian's mfsmount 3.0 (type fuse, source mfs#10.213.0.1:9421 with # as
// \043), taken from a live mount of scripts/moosefs-cluster.
func TestMountOf(t *testing.T) {
	const mountinfo = `22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:35 / /mnt/mfs rw,nosuid,nodev shared:20 - fuse.mfs mfs#master:9421 rw,user_id=0
41 22 0:36 / /mnt/mfs\040two rw shared:21 - fuse.moosefs mfs#other:9421 rw
42 22 0:37 / /mnt/lustre rw shared:22 - lustre 10.0.0.1@tcp:/fs rw,flock
43 40 0:38 / /mnt/mfs/tmp rw shared:23 - tmpfs tmpfs rw
48 27 0:39 / /srv/mfs/mnt rw,nosuid,nodev,relatime - fuse mfs\04310.213.0.1:9421 rw,user_id=0,group_id=0,allow_other
`
	tests := []struct {
		path string
		want mountEntry
		kind string
	}{
		{"/", mountEntry{"ext4", "/dev/vda"}, LayoutStatic},
		{"/home/u", mountEntry{"ext4", "/dev/vda"}, LayoutStatic},
		{"/mnt/mfs", mountEntry{"fuse.mfs", "mfs#master:9421"}, LayoutMooseFS},
		{"/mnt/mfs/run/out", mountEntry{"fuse.mfs", "mfs#master:9421"}, LayoutMooseFS},
		{"/mnt/mfs/tmp/x", mountEntry{"tmpfs", "tmpfs"}, LayoutStatic},
		{"/mnt/mfsx", mountEntry{"ext4", "/dev/vda"}, LayoutStatic},
		{"/mnt/mfs two/f", mountEntry{"fuse.moosefs", "mfs#other:9421"}, LayoutMooseFS},
		{"/mnt/lustre/scratch", mountEntry{"lustre", "10.0.0.1@tcp:/fs"}, LayoutStatic},
		{"/srv/mfs/mnt", mountEntry{"fuse", "mfs#10.213.0.1:9421"}, LayoutMooseFS},
		{"/srv/mfs/mnt/bench/f", mountEntry{"fuse", "mfs#10.213.0.1:9421"}, LayoutMooseFS},
	}
	for _, tt := range tests {
		got := mountOf(strings.NewReader(mountinfo), tt.path)
		if got != tt.want {
			t.Errorf("mountOf(%q) = %+v, want %+v", tt.path, got, tt.want)
		}
		magic := int64(fuseSuperMagic)
		if !strings.HasPrefix(got.Type, "fuse") {
			magic = 0xef53
		}
		if kind, _ := detectKind(magic, got); kind != tt.kind {
			t.Errorf("kind of %q = %q, want %q", tt.path, kind, tt.kind)
		}
	}
}

func TestParseTargetOBD(t *testing.T) {
	const listing = "0: fs-OST0000_UUID ACTIVE\n1: fs-OST0001_UUID ACTIVE\n7: fs-OST0007_UUID INACTIVE\n"
	if got := parseTargetOBD([]byte(listing)); got != 8 {
		t.Errorf("parseTargetOBD = %d, want 8 (highest index 7, plus one)", got)
	}
	if got := parseTargetOBD([]byte("garbage\n")); got != 0 {
		t.Errorf("parseTargetOBD(garbage) = %d, want 0", got)
	}
}
