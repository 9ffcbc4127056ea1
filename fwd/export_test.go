package fwd

// OpenFiles exposes the number of distinct open paths to the tests.
func (d *Daemon) OpenFiles() int { return d.openFiles() }
