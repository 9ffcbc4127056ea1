// Command mklog writes a synthetic Darshan log (format 3.21, little
// endian, uncompressed) with one shared file, its POSIX record and a
// DXT_POSIX trace of -segments 1D-strided writes spread over -ranks
// ranks: a log of any size, to measure the reader on (a real DXT log of
// gigabytes is not at hand).
//
//	go run ./darshan/internal/mklog -segments 27000000 -out DIR/big.darshan
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
)

func main() {
	segments := flag.Int64("segments", 1_000_000, "DXT segments in all")
	ranks := flag.Int64("ranks", 64, "ranks")
	out := flag.String("out", "", "the log to write")
	flag.Parse()
	if *out == "" || *segments < *ranks || *ranks < 1 {
		fmt.Fprintln(os.Stderr, "mklog: -out is required, and -segments >= -ranks >= 1")
		os.Exit(2)
	}
	if err := write(*out, *segments, *ranks); err != nil {
		fmt.Fprintln(os.Stderr, "mklog:", err)
		os.Exit(1)
	}
}

func write(path string, segments, ranks int64) error {
	le := binary.LittleEndian
	const (
		headerSize = 360
		fileID     = 0x5eed
		size       = 32 << 10
		posixMod   = 1
		dxtMod     = 9 // DXT_POSIX in the module table of 3.20-3.21
	)
	job := make([]byte, 5*8+1024)
	le.PutUint64(job[8:], 1_700_000_000)  // start
	le.PutUint64(job[16:], 1_700_000_600) // end
	le.PutUint64(job[24:], uint64(ranks)) // nprocs
	le.PutUint64(job[32:], 42)            // job id
	copy(job[40:], "lib_ver=3.2.1\n")
	job = append(job, "synthetic-strided-writer\nlustre\t/scratch\n"...)
	names := binary.LittleEndian.AppendUint64(nil, fileID)
	names = append(names, "/scratch/shared.dat\x00"...)
	per := segments / ranks
	posix := make([]byte, 16+8*(69+17))
	le.PutUint64(posix[0:], fileID)
	le.PutUint64(posix[8:], math.MaxUint64) // rank -1: shared
	put := func(i int, v int64) { le.PutUint64(posix[16+8*i:], uint64(v)) }
	put(4, per*ranks)        // POSIX_WRITES
	put(15, per*ranks*size)  // POSIX_BYTES_WRITTEN
	put(21, per*ranks-ranks) // POSIX_SEQ_WRITES
	put(42, per*ranks)       // POSIX_SIZE_WRITE_10K_100K
	dxtLen := ranks * (104 + per*32)
	offJob := int64(headerSize)
	offNames := offJob + int64(len(job))
	offPosix := offNames + int64(len(names))
	offDXT := offPosix + int64(len(posix))
	h := make([]byte, headerSize)
	copy(h, "3.21")
	le.PutUint64(h[8:], 6567223)
	h[16] = 2 // no compression
	le.PutUint64(h[24:], uint64(offNames))
	le.PutUint64(h[32:], uint64(len(names)))
	le.PutUint64(h[40+16*posixMod:], uint64(offPosix))
	le.PutUint64(h[48+16*posixMod:], uint64(len(posix)))
	le.PutUint64(h[40+16*dxtMod:], uint64(offDXT))
	le.PutUint64(h[48+16*dxtMod:], uint64(dxtLen))
	le.PutUint32(h[296+4*posixMod:], 4)
	le.PutUint32(h[296+4*dxtMod:], 1)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, b := range [][]byte{h, job, names, posix} {
		w.Write(b)
	}
	rec := make([]byte, 104)
	seg := make([]byte, 32)
	for r := range ranks {
		le.PutUint64(rec[0:], fileID)
		le.PutUint64(rec[8:], uint64(r))
		le.PutUint64(rec[16:], math.MaxUint64)
		copy(rec[24:88], fmt.Sprintf("node%04d", r/16))
		le.PutUint64(rec[88:], uint64(per))
		le.PutUint64(rec[96:], 0)
		w.Write(rec)
		for k := range per {
			le.PutUint64(seg[0:], uint64((k*ranks+r)*size))
			le.PutUint64(seg[8:], size)
			start := float64(k) * 600 / float64(per)
			le.PutUint64(seg[16:], math.Float64bits(start))
			le.PutUint64(seg[24:], math.Float64bits(start+0.001))
			w.Write(seg)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
