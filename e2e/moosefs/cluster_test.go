package moosefs_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// cluster is a MooseFS cluster started by scripts/moosefs-cluster.
type cluster struct {
	dir    string   // the script's DIR
	mnt    string   // the mfsmount mount point
	exec   []string // the prefix that runs a MooseFS tool in the master's namespace
	chunks []string // chunk servers, address:port, in the script's order
}

// script is the cluster script, from this package's directory.
func script(t testing.TB) string {
	t.Helper()
	s, err := filepath.Abs(filepath.Join("..", "..", "scripts", "moosefs-cluster"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// skipUnlessCluster skips the test where a MooseFS cluster cannot run on
// this machine, saying what is missing.
func skipUnlessCluster(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the MooseFS cluster needs root (network namespaces, mounts)")
	}
	for _, b := range []string{"mfsmaster", "mfschunkserver", "mfsmount", "mfsfileinfo", "mfssetgoal", "mfscli"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is missing: apt-get install -y moosefs-master moosefs-chunkserver moosefs-client moosefs-cli", b)
		}
	}
	for _, b := range []string{"ip", "tc", "nsenter"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is missing: apt-get install -y iproute2 util-linux", b)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skipf("FUSE is missing (%v): apt-get install -y fuse3, and give a container /dev/fuse", err)
	}
	probe := fmt.Sprintf("adaptio-probe-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", probe).CombinedOutput(); err != nil {
		t.Skipf("ip netns does not work here: %v: %s", err, bytes.TrimSpace(out))
	}
	if out, err := exec.Command("ip", "netns", "del", probe).CombinedOutput(); err != nil {
		t.Fatalf("ip netns del %s: %v: %s", probe, err, out)
	}
}

// startCluster starts a cluster in a temporary folder and stops it when the
// test ends (also when the start failed half-way).
func startCluster(t testing.TB, args ...string) *cluster {
	t.Helper()
	skipUnlessCluster(t)
	dir := t.TempDir()
	sh := script(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, sh, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("moosefs-cluster stop: %v\n%s", err, out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, sh, append(append([]string{"start"}, args...), dir)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 2 {
			t.Skipf("moosefs-cluster cannot run here: %s", bytes.TrimSpace(stderr.Bytes()))
		}
		logs, _ := filepath.Glob(filepath.Join(dir, "logs", "*.log"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", filepath.Base(l), b)
		}
		t.Fatalf("moosefs-cluster start: %v\n%s%s", err, out, stderr.Bytes())
	}
	c, err := parseStatus(out)
	if err != nil {
		t.Fatalf("moosefs-cluster start printed %q: %v", out, err)
	}
	c.dir = dir
	return c
}

// parseStatus reads the key=value lines of "moosefs-cluster status".
func parseStatus(out []byte) (*cluster, error) {
	c := &cluster{}
	state := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		switch k {
		case "mount":
			c.mnt = v
		case "exec":
			c.exec = strings.Fields(v)
		case "chunkserver":
			f := strings.Fields(v)
			if len(f) != 3 || f[2] != "running" {
				return nil, fmt.Errorf("chunk server %q not running", v)
			}
			c.chunks = append(c.chunks, f[0])
		case "state":
			state = v
		}
	}
	if state != "running" || c.mnt == "" || c.mnt == "none" || len(c.exec) == 0 || len(c.chunks) == 0 {
		return nil, fmt.Errorf("cluster not running (state %q, mount %q, %d chunk servers)", state, c.mnt, len(c.chunks))
	}
	return c, nil
}

// tool runs a MooseFS tool (mfsfileinfo, ...) in the master's namespace.
func (c *cluster) tool(t testing.TB, args ...string) []byte {
	t.Helper()
	argv := append(append([]string(nil), c.exec...), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return out
}
