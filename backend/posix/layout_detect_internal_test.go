package posix

import (
	"strings"
	"testing"
)

func TestDetectKind(t *testing.T) {
	tests := []struct {
		magic  int64
		fsType string
		want   string
	}{
		{0x0BD00BD0, "", LayoutLustre},
		{0x65735546, "fuse.mfs", "moosefs"},
		{0x65735546, "fuse.moosefs", "moosefs"},
		{0x65735546, "fuse.sshfs", LayoutStatic},
		{0x01021994, "tmpfs", LayoutStatic},
		{0xef53, "ext4", LayoutStatic},
	}
	for _, tt := range tests {
		if got, why := detectKind(tt.magic, tt.fsType); got != tt.want || why == "" {
			t.Errorf("detectKind(%#x, %q) = %q, %q; want %q", tt.magic, tt.fsType, got, why, tt.want)
		}
	}
}

func TestMountType(t *testing.T) {
	const mountinfo = `22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:35 / /mnt/mfs rw,nosuid,nodev shared:20 - fuse.mfs mfs#master:9421 rw,user_id=0
41 22 0:36 / /mnt/mfs\040two rw shared:21 - fuse.moosefs mfs#other:9421 rw
42 22 0:37 / /mnt/lustre rw shared:22 - lustre 10.0.0.1@tcp:/fs rw,flock
43 40 0:38 / /mnt/mfs/tmp rw shared:23 - tmpfs tmpfs rw
`
	tests := []struct{ path, want string }{
		{"/", "ext4"},
		{"/home/u", "ext4"},
		{"/mnt/mfs", "fuse.mfs"},
		{"/mnt/mfs/run/out", "fuse.mfs"},
		{"/mnt/mfs/tmp/x", "tmpfs"},
		{"/mnt/mfsx", "ext4"},
		{"/mnt/mfs two/f", "fuse.moosefs"},
		{"/mnt/lustre/scratch", "lustre"},
	}
	for _, tt := range tests {
		if got := mountType(strings.NewReader(mountinfo), tt.path); got != tt.want {
			t.Errorf("mountType(%q) = %q, want %q", tt.path, got, tt.want)
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
