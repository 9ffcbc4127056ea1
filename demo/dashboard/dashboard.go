package dashboard

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"

	"github.com/adaptio/adaptio/demo/record"
)

//go:embed assets
var assets embed.FS

// Handler serves the dashboard page at "/" and its data at "/api/state" from
// rec. api/state takes the positions already seen (s: seconds, i:
// iterations, e: events) and max (the most seconds to return) and answers
// with a record.Delta in JSON.
func Handler(rec *record.Recorder) http.Handler {
	mux := http.NewServeMux()
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // programmer error: the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux.Handle("GET /", noCache(files))
	mux.HandleFunc("GET /api/state", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		num := func(k string) int {
			n, _ := strconv.Atoi(q.Get(k))
			return max(n, 0)
		}
		d := rec.Since(num("s"), num("i"), num("e"), num("max"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(d)
	})
	return mux
}

func noCache(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
