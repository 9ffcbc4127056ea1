// Package service runs the Council on NATS ("adaptio council"): an embedded
// NATS server with JetStream (or an external cluster), one wildcard
// subscription for every Announcer's reports, one subject for decisions,
// the learned state in a JetStream KV bucket after every round (a restarted
// Council resumes learning), a JSON-lines decision log, and HTTP /metrics,
// /status and /healthz. It follows the NATS server's lifecycle so a test or
// the demo can run it in one process:
//
//	s, err := service.New(service.Options{Port: -1, StateDir: dir, HTTPAddr: "127.0.0.1:0"})
//	if err != nil { ... }
//	if err := s.Start(); err != nil { ... }
//	defer s.Shutdown()                 // persists the learned state
//	url := s.ClientURL()               // for announce.Options.URL
//	st := s.Status()                   // contexts, estimates, counts, window in force
//
// Subjects and message formats are in package councilmsg and docs/council.md.
package service
