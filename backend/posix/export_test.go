package posix

// LocalFS exposes localFS to the tests.
var LocalFS = localFS

// WaitMooseFS waits until the moosefs kind l has no chunk-list read in
// flight.
func WaitMooseFS(l Layouts) { l.(*moosefs).wg.Wait() }
