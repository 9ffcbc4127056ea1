package darshan_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"github.com/adaptio/adaptio/darshan"
)

// uncompressed rewrites a zlib-compressed log of format 3.10-3.21 (little
// endian) with every region decompressed and the compression type None,
// so that a benchmark measures the decoding of records alone.
func uncompressed(tb testing.TB, data []byte) (out []byte, records int64) {
	const mods, nameOff, headerSize = 16, 24, 360
	if string(data[:4]) != "3.21" && string(data[:4]) != "3.10" && string(data[:4]) != "3.20" {
		tb.Fatalf("format %q: want 3.10-3.21", data[:4])
	}
	le := binary.LittleEndian
	type reg struct{ at, off, len int }
	regs := []reg{}
	for i := range 1 + mods {
		at := nameOff + 16*i
		regs = append(regs, reg{at, int(le.Uint64(data[at:])), int(le.Uint64(data[at+8:]))})
	}
	inflate := func(b []byte) []byte {
		var out bytes.Buffer
		r := bytes.NewReader(b)
		for r.Len() > 0 {
			z, err := zlib.NewReader(r)
			if err != nil {
				tb.Fatal(err)
			}
			if _, err := io.Copy(&out, z); err != nil {
				tb.Fatal(err)
			}
		}
		return out.Bytes()
	}
	first := len(data)
	for _, r := range regs {
		if r.len > 0 && r.off < first {
			first = r.off
		}
	}
	out = append([]byte(nil), data[:headerSize]...)
	out[16] = 2 // no compression
	out = append(out, inflate(data[headerSize:first])...)
	for _, r := range regs {
		if r.len == 0 {
			continue
		}
		body := inflate(data[r.off : r.off+r.len])
		le.PutUint64(out[r.at:], uint64(len(out)))
		le.PutUint64(out[r.at+8:], uint64(len(body)))
		out = append(out, body...)
		records += int64(len(body))
	}
	return out, records
}

// benchDecode reads every record and DXT segment of the log in data, n
// bytes of records, once per iteration.
func benchDecode(b *testing.B, data []byte, n int64) {
	b.SetBytes(n)
	b.ReportAllocs()
	for b.Loop() {
		l, err := darshan.NewLog(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := readAll(l); err != nil {
			b.Fatal(err)
		}
	}
}

// largestLog is the largest log of the shared set (131,071 DXT segments).
func largestLog(b *testing.B) []byte {
	data, err := os.ReadFile(logsDir + "/partial_data_dxt/partial_data_dxt.darshan")
	if err != nil {
		b.Skipf("%v (the shared data set is not beside the repository)", err)
	}
	return data
}

// BenchmarkDecodeUncompressed decodes the largest log, decompressed
// beforehand: the speed of decoding alone, in bytes of records per second.
func BenchmarkDecodeUncompressed(b *testing.B) {
	raw, n := uncompressed(b, largestLog(b))
	benchDecode(b, raw, n)
}

// BenchmarkDecodeCompressed is the same log as it is, zlib included.
func BenchmarkDecodeCompressed(b *testing.B) {
	data := largestLog(b)
	_, n := uncompressed(b, data)
	benchDecode(b, data, n)
}

// The uncompressed copy reads back the same as the original.
func TestUncompressedCopyReadsTheSame(t *testing.T) {
	data, err := os.ReadFile(logsDir + "/partial_data_dxt/partial_data_dxt.darshan")
	if err != nil {
		t.Skipf("%v (the shared data set is not beside the repository)", err)
	}
	raw, _ := uncompressed(t, data)
	count := func(b []byte) (int, int) {
		l, err := darshan.NewLog(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		r, s, err := readAll(l)
		if err != nil {
			t.Fatal(err)
		}
		return r, s
	}
	r1, s1 := count(data)
	r2, s2 := count(raw)
	if r1 != r2 || s1 != s2 || s1 < 100000 {
		t.Fatalf("compressed %d records %d segments, uncompressed %d and %d", r1, s1, r2, s2)
	}
}
