package fusemount_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/adaptio/adaptio/fwd"
)

// fioBandwidth runs one fio job in dir and returns its bandwidth in MiB/s.
func fioBandwidth(b *testing.B, fio, dir, rw, bs string) float64 {
	b.Helper()
	args := []string{"--name=bw", "--directory=" + dir, "--rw=" + rw, "--bs=" + bs, "--size=64m",
		"--numjobs=4", "--ioengine=psync", "--group_reporting", "--output-format=json"}
	out, err := exec.Command(fio, args...).Output()
	if err != nil {
		b.Fatalf("fio %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var res struct {
		Jobs []struct {
			Read  struct{ BW float64 } `json:"read"`  // KiB/s
			Write struct{ BW float64 } `json:"write"` // KiB/s
		} `json:"jobs"`
	}
	if i := strings.IndexByte(string(out), '{'); i > 0 {
		out = out[i:] // fio may print notes before the JSON
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Jobs) == 0 {
		b.Fatalf("fio output: %v\n%s", err, out)
	}
	if strings.Contains(rw, "read") {
		return res.Jobs[0].Read.BW / 1024
	}
	return res.Jobs[0].Write.BW / 1024
}

// BenchmarkFioMountVsDirect runs the same fio jobs (4 jobs of 64 MiB, psync,
// over files laid out beforehand)
// through the FUSE mount of a forwarder and directly on the backend's
// directory (tmpfs when available), and reports both bandwidths and their
// ratio, for FIFO and for TWINS (1 ms window, 4 data servers: a request
// waits for its server's window).
func BenchmarkFioMountVsDirect(b *testing.B) {
	fio, err := exec.LookPath("fio")
	if err != nil {
		b.Skip("fio not installed")
	}
	for _, bs := range []string{"1m", "32k"} {
		for _, scheduler := range []string{"fifo", "twins"} {
			for _, rw := range []string{"write", "read"} {
				b.Run("bs="+bs+"/sched="+scheduler+"/rw="+rw, func(b *testing.B) {
					root := b.TempDir()
					if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() { // no disk delays
						if root, err = os.MkdirTemp("/dev/shm", "adaptio-fio-"); err != nil {
							b.Fatal(err)
						}
						defer os.RemoveAll(root)
					}
					mnt, root := mountedWith(b, root, fwd.Options{Scheduler: scheduler})
					direct := filepath.Join(root, "direct")
					viaMount := filepath.Join(mnt, "fwd")
					for _, d := range []string{direct, viaMount} {
						if err := os.MkdirAll(d, 0o755); err != nil {
							b.Fatal(err)
						}
						// Lay the files out first: a write run then
						// overwrites, as IOR's repetitions do, instead
						// of timing the file system's page allocation
						// (in a virtual machine, first-touch memory
						// costs vary from run to run).
						fioBandwidth(b, fio, d, "write", "1m")
					}
					var sumDirect, sumMount float64
					for i := 0; i < b.N; i++ {
						sumDirect += fioBandwidth(b, fio, direct, rw, bs)
						sumMount += fioBandwidth(b, fio, viaMount, rw, bs)
					}
					b.ReportMetric(sumDirect/float64(b.N), "direct-MiB/s")
					b.ReportMetric(sumMount/float64(b.N), "mount-MiB/s")
					b.ReportMetric(sumMount/sumDirect, "mount/direct")
				})
			}
		}
	}
}
