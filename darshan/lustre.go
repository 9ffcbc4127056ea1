package darshan

import (
	"bufio"
	"io"
	"iter"
)

// LustreComponent is one component of a file's Lustre layout (a
// progressive file layout has several; older logs one).
type LustreComponent struct {
	StripeSize  int64
	StripeCount int64
	Pattern     int64 // Lustre's LOV pattern (-1: not recorded)
	Flags       int64 // component flags (-1: not recorded)
	ExtStart    int64 // the component's extent in the file
	ExtEnd      int64 // -1: end of file
	MirrorID    int64
	Pool        string
	OSTs        []int64 // the OST of each stripe
}

// LustreRecord is a file's Lustre layout as the job saw it.
type LustreRecord struct {
	ID         uint64
	Rank       int64
	Name       string
	Components []LustreComponent
}

// Stripes is the number of stripes over every component.
func (r LustreRecord) Stripes() int64 {
	var n int64
	for _, c := range r.Components {
		n += c.StripeCount
	}
	return n
}

// maxLustre bounds a record's components and stripes (Lustre allows
// 2,000 stripes a file).
const maxLustre = 1 << 16

// LustreRecords iterates over the LUSTRE module's records (versions 1
// and 2; a version-1 record is one component, as darshan-util converts
// it; unused components, stripe size -1, are left out as darshan-util
// does).
func (l *Log) LustreRecords() iter.Seq2[LustreRecord, error] {
	return func(yield func(LustreRecord, error) bool) {
		if !l.HasModule(Lustre) {
			return
		}
		v := l.ModuleVersion[Lustre]
		where := "LUSTRE region"
		if v < 1 || v > 2 {
			yield(LustreRecord{}, bad(where, int64(l.mods[Lustre].off), "module version %d: this reader knows 1 and 2", v))
			return
		}
		br := bufio.NewReaderSize(l.open(l.mods[Lustre]), 64<<10)
		var off int64
		words := func(n int64) ([]int64, error) {
			b := make([]byte, 8*n)
			if k, err := io.ReadFull(br, b); err != nil {
				return nil, bad(where, off, "record cut short (%d of %d bytes): %v", k, len(b), err)
			}
			off += 8 * n
			out := make([]int64, n)
			for i := range out {
				out[i] = int64(l.order.Uint64(b[8*i:]))
			}
			return out, nil
		}
		for {
			if _, err := br.Peek(1); err != nil {
				return
			}
			var r LustreRecord
			if v == 1 {
				fixed, err := words(7)
				if err != nil {
					yield(r, err)
					return
				}
				r.ID, r.Rank = uint64(fixed[0]), fixed[1]
				if fixed[6] < 0 || fixed[6] > maxLustre {
					yield(r, bad(where, off, "record %d: %d stripes", r.ID, fixed[6]))
					return
				}
				osts, err := words(fixed[6])
				if err != nil {
					yield(r, err)
					return
				}
				r.Components = []LustreComponent{{StripeSize: fixed[5], StripeCount: fixed[6], Pattern: -1, Flags: -1, ExtEnd: -1, MirrorID: -1, OSTs: osts}}
			} else {
				fixed, err := words(4)
				if err != nil {
					yield(r, err)
					return
				}
				r.ID, r.Rank = uint64(fixed[0]), fixed[1]
				comps, stripes := fixed[2], fixed[3]
				if comps < 0 || stripes < 0 || comps > maxLustre || stripes > maxLustre {
					yield(r, bad(where, off, "record %d: %d components, %d stripes", r.ID, comps, stripes))
					return
				}
				all := make([]LustreComponent, 0, comps)
				for range comps {
					c, err := words(7)
					if err != nil {
						yield(r, err)
						return
					}
					pool := make([]byte, 16)
					if _, err := io.ReadFull(br, pool); err != nil {
						yield(r, bad(where, off, "record %d: pool name cut short: %v", r.ID, err))
						return
					}
					off += 16
					all = append(all, LustreComponent{StripeSize: c[0], StripeCount: c[1], Pattern: c[2], Flags: c[3],
						ExtStart: c[4], ExtEnd: c[5], MirrorID: c[6], Pool: cString(pool)})
				}
				osts, err := words(stripes)
				if err != nil {
					yield(r, err)
					return
				}
				for _, c := range all {
					if c.StripeSize == -1 { // unused from here on
						break
					}
					n := min(max(c.StripeCount, 0), int64(len(osts)))
					c.OSTs, osts = osts[:n:n], osts[n:]
					r.Components = append(r.Components, c)
				}
			}
			r.Name = l.nameOf[r.ID]
			if !yield(r, nil) {
				return
			}
		}
	}
}
