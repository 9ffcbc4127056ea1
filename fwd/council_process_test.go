package fwd_test

import (
	"os"
	"testing"

	"github.com/adaptio/adaptio/council"
	"github.com/adaptio/adaptio/council/service"
	"github.com/adaptio/adaptio/internal/testproc"
)

// councilEnv, set in the environment, makes the test binary run a Council
// (embedded NATS) instead of the tests: the Announcer benchmark's Council
// runs in a process of its own, as on a cluster, so its goroutines and
// timers do not share the daemon's Go scheduler.
const councilEnv = "ADAPTIO_FWD_TEST_COUNCIL"

func TestMain(m *testing.M) {
	testproc.Serve(councilEnv, serveCouncil)
	testproc.Serve(daemonEnv, serveDaemon)
	os.Exit(m.Run())
}

// serveCouncil starts a Council and publishes its NATS URL.
func serveCouncil(string) (string, func(), error) {
	c, err := service.New(service.Options{Port: -1, Core: council.Config{Nodes: 1}})
	if err != nil {
		return "", nil, err
	}
	if err := c.Start(); err != nil {
		return "", nil, err
	}
	return c.ClientURL(), c.Shutdown, nil
}

// startCouncilProcess runs a Council in a child process (this test binary)
// and returns its NATS URL; the child is stopped when the benchmark ends.
func startCouncilProcess(tb testing.TB) string {
	tb.Helper()
	return testproc.Start(tb, councilEnv, tb.TempDir(), "the Council")
}
