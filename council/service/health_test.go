package service

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/adaptio/adaptio/access"
	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/councilmsg"
	"github.com/adaptio/adaptio/internal/poll"
	"github.com/adaptio/adaptio/rw"
	"github.com/adaptio/adaptio/sched"
)

func healthz(t *testing.T, s *Service) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// reportEvery has node n report every iv (an interval of iv) until stop is closed.
func reportEvery(t *testing.T, n *node, iv time.Duration, stop chan struct{}) {
	go func() {
		tk := time.NewTicker(iv)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			n.seq++
			o := access.Observation{Node: n.id, Interval: iv, Processes: 8, Op: rw.Write, FileHandles: 8,
				ReqAvg: 1 << 20, ReqMin: 1 << 20, ReqMax: 1 << 20, Bandwidth: 1e8, Bytes: int64(1e8 * iv.Seconds()), Requests: 100, Window: sched.DefaultWindow}
			b, err := councilmsg.MarshalReport(councilmsg.Report{Instance: uint64(n.id + 1), Seq: n.seq, Obs: o})
			if err != nil {
				t.Error(err)
				return
			}
			_ = n.nc.Publish(n.subj.Report(n.id), b)
		}
	}()
}

// TestHealthzDegraded: /healthz says ok while every known node reports and
// the learned state is written; degraded (503) naming the silent node when
// one stops reporting, and naming the failed write when the KV bucket is
// gone.
func TestHealthzDegraded(t *testing.T) {
	s := startService(t, Options{HTTPAddr: "127.0.0.1:0", StateDir: t.TempDir(), Core: council.Config{Nodes: 2, Timeout: 50 * time.Millisecond}})
	defer s.Shutdown()
	nc := connect(t, s.ClientURL())
	const iv = 50 * time.Millisecond
	stop0, stop1 := make(chan struct{}), make(chan struct{})
	defer close(stop0)
	reportEvery(t, &node{id: 0, nc: nc, subj: s.Subjects()}, iv, stop0)
	reportEvery(t, &node{id: 1, nc: nc, subj: s.Subjects()}, iv, stop1)
	poll.Until(t, "healthy with both nodes reporting", 5*time.Second, func() bool {
		code, body := healthz(t, s)
		return code == http.StatusOK && body == "ok\n" && s.Status().Round >= 3
	})

	close(stop1)
	var body string
	poll.Until(t, "degraded naming node 1", 5*time.Second, func() bool {
		var code int
		code, body = healthz(t, s)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "no report for 3 intervals from I/O node 1 (")
	})
	if !strings.HasPrefix(body, "degraded\n- ") || strings.Contains(body, "node 0") || strings.Contains(body, "persisted") {
		t.Fatalf("body %q, want degraded naming node 1 alone", body)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(context.Background(), s.opts.Bucket); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "degraded: state not persisted", 10*time.Second, func() bool {
		_, body = healthz(t, s)
		return strings.Contains(body, "learned state not persisted: the last write to KV bucket "+s.opts.Bucket+" failed")
	})

}
