package fwd_test

import (
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/internal/poll"
)

// councilURLFile, set in the environment, makes the test binary run a
// Council (embedded NATS) instead of the tests, write its client URL to that
// file, and serve until killed: the Announcer benchmark's Council runs in a
// process of its own, as on a cluster, so its goroutines and timers do not
// share the daemon's Go scheduler.
const councilURLFile = "ADAPTIO_FWD_TEST_COUNCIL_URL_FILE"

func TestMain(m *testing.M) {
	if f := os.Getenv(councilURLFile); f != "" {
		os.Exit(serveCouncil(f))
	}
	os.Exit(m.Run())
}

func serveCouncil(urlFile string) int {
	c, err := service.New(service.Options{Port: -1, Core: council.Config{Nodes: 1}})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		os.Stderr.WriteString("council: " + err.Error() + "\n")
		return 1
	}
	defer c.Shutdown()
	tmp := urlFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(c.ClientURL()), 0o644); err != nil || os.Rename(tmp, urlFile) != nil {
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return 0
}

// startCouncilProcess runs a Council in a child process (this test binary
// in Council mode) and returns its NATS URL; the child is stopped when the
// benchmark ends.
func startCouncilProcess(tb testing.TB) string {
	tb.Helper()
	urlFile := filepath.Join(tb.TempDir(), "council.url")
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), councilURLFile+"="+urlFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	var url string
	poll.Until(tb, "the Council process to write its URL", 20*time.Second, func() bool {
		b, err := os.ReadFile(urlFile)
		url = strings.TrimSpace(string(b))
		return err == nil && url != ""
	})
	return url
}
