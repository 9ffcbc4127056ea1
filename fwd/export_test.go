package fwd

// OpenFiles exposes the number of distinct open paths to the tests.
func (d *Daemon) OpenFiles() int { return d.openFiles() }

// Workers exposes the number of workers the daemon runs to the tests.
func (d *Daemon) Workers() int { return d.opts.Workers }
