package fwdproto

// AllProcesses, as the Process of a job request, binds the session's
// default job: the job of every process of the session that has no job of
// its own.
const AllProcesses uint32 = 1<<32 - 1

// MaxJob is the longest job id on the wire, in bytes.
const MaxJob = 255

// appendV5 encodes the payloads of version 5's operations (requests: their
// OK responses are empty).
func appendV5(e *enc, m *Msg) {
	if m.Op == OpJob {
		e.u32(m.Process)
		e.str(m.Job)
	}
}

// decodeV5 decodes the payloads of version 5's operations.
func decodeV5(d *dec, m *Msg) {
	if m.Op == OpJob {
		m.Process = d.u32()
		m.Job = d.str(MaxJob)
	}
}
