package experiment

import (
	"bytes"
	"testing"

	"github.com/adaptio/adaptio/forge"
)

// FuzzForgePoints feeds arbitrary bytes to the FORGE reader and groups what
// it accepts: it must never panic, and every point is valid.
func FuzzForgePoints(f *testing.F) {
	f.Add([]byte("forwarders;clients;processes;layout;spatiality;odirect;stonewall;request;total;operation;time;transfered;bandwidth\n1;8;96;1;1;1;60;32;131072;write;60;1;30\n"))
	f.Add([]byte("forwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n2;8;96;0;0;8192;write;5\n2;8;96;0;0;8192;write;x\n"))
	f.Add([]byte("forwarders;clients;processes;layout;spatiality;request;operation;bandwidth\n0;8;96;0;0;8192;write;5\n2;8;96;0;0;8192;write;7\n"))
	f.Add([]byte("a;b\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := forge.Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		pts, _ := ForgePoints(rows)
		for _, p := range pts {
			if p.Processes <= 0 || p.Clients <= 0 || p.Forwarders <= 0 || p.RequestBytes <= 0 || p.Repetitions < 1 || p.Layout > 1 || p.Spatiality > 1 {
				t.Fatalf("invalid point %+v", p)
			}
		}
	})
}
