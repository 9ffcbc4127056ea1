// Package dashboard serves adaptio's live web dashboard from the binary: one
// hand-written page (HTML, CSS, JavaScript drawing SVG charts; no libraries,
// no fonts or scripts from elsewhere, so it works offline) that polls
// /api/state each second for what the demo recorded since its last poll.
//
//	rec := record.New(meta)
//	mux.Handle("/", dashboard.Handler(rec))
//	// the run writes into rec; the page follows it live
package dashboard
