package lustre

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Magic numbers of the layout structures (lmm_magic, lcm_magic).
const (
	MagicV1      = 0x0BD10BD0 // lov_user_md_v1 / lov_mds_md_v1: a plain layout
	MagicV3      = 0x0BD30BD0 // lov_user_md_v3: a plain layout with a pool name
	MagicCompV1  = 0x0BD60BD0 // lov_comp_md_v1: a composite layout
	MagicForeign = 0x0BD70BD0 // lov_foreign_md: data outside Lustre's OSTs
)

// Layout patterns (lmm_pattern): the low bits name the pattern, the high
// bits are flags.
const (
	PatternRAID0        = 0x001      // striped over OSTs
	PatternMDT          = 0x100      // data on the MDT (DoM): no OST holds it
	PatternOverstriping = 0x200      // several stripes per OST
	PatternHole         = 0x40000000 // some objects are missing (LOV_PATTERN_F_HOLE)
	PatternReleased     = 0x80000000 // HSM released: the data are in the archive (LOV_PATTERN_F_RELEASED)
)

// Component flags (lcme_flags).
const (
	FlagStale     = 0x01 // FLR mirror: stale data
	FlagPrefRead  = 0x02 // FLR mirror: preferred for reading
	FlagPrefWrite = 0x04 // FLR mirror: preferred for writing
	FlagInit      = 0x10 // instantiated: its OST objects exist
	FlagExtension = 0x40 // self-extending layout's extension space, never instantiated
)

// EOF is the end of an extent that runs to the end of the file (LUSTRE_EOF).
const EOF = ^uint64(0)

// MDT is the server Stripe reports for bytes on the metadata target (data
// on MDT); Stripe never returns it for a RAID0 component.
const MDT = -1

// Sizes of the on-disk structures, in bytes.
const (
	sizeV1     = 32 // lov_user_md_v1 without its objects
	sizeV3     = 48 // lov_user_md_v3: v1 and a 16-byte pool name
	sizeObject = 24 // lov_user_ost_data_v1
	sizeComp   = 32 // lov_comp_md_v1 without its entries
	sizeEntry  = 48 // lov_comp_md_entry_v1
	poolLen    = 16 // LOV_MAXPOOLNAME + 1
	maxOST     = 0xFFFF
)

// Errors of Decode and Stripe, wrapped with detail.
var (
	ErrShort           = errors.New("lustre: layout too short")
	ErrCorrupt         = errors.New("lustre: corrupt layout")
	ErrMagic           = errors.New("lustre: unknown layout magic")
	ErrForeign         = errors.New("lustre: foreign layout (data not on Lustre OSTs)")
	ErrNotInstantiated = errors.New("lustre: component not instantiated")
	ErrNoStripes       = errors.New("lustre: component not striped over OSTs")
)

// Layout is a file's decoded layout: one component for a plain layout,
// one per entry of a composite one.
type Layout struct {
	Magic      uint32
	Gen        uint32 // layout generation (lcm_layout_gen; for a plain layout read from a file, lmm_layout_gen)
	Mirrors    int    // FLR mirrors (lcm_mirror_count + 1); 1 for a plain layout
	Components []Component
}

// Component is a plain layout over file extent [Start, End).
type Component struct {
	ID         uint32 // lcme_id (0 for a plain layout)
	Flags      uint32 // lcme_flags (FlagInit, ...); a plain layout with objects has FlagInit
	Start, End uint64 // file extent; End is EOF for the last
	Magic      uint32 // MagicV1 or MagicV3
	Pattern    uint32 // lmm_pattern
	StripeSize uint32 // bytes per stripe (for DoM: the component's size)
	// StripeCount is the declared count: -1 means all OSTs (0xFFFF on
	// disk); 0 the file system's default.
	StripeCount int
	// StripeOffset is lmm_stripe_offset: the OST of the first stripe asked
	// for, -1 for any. Lustre stores the layout generation in the same
	// field once objects exist, so it means an OST only where OSTs is
	// empty.
	StripeOffset int
	Pool         string // v3's pool name, "" for none
	// OSTs are the OST indices of the component's objects, stripe i on
	// OSTs[i] (lmm_objects[i].l_ost_idx); empty until it is instantiated.
	OSTs []int
}

// Instantiated reports whether the component's data have a place: its
// objects exist (FlagInit), or it is on the MDT, whose data need none.
func (c *Component) Instantiated() bool {
	return c.Flags&FlagInit != 0
}

// DoM reports whether the component's data are on the MDT.
func (c *Component) DoM() bool { return c.Pattern&0xFFFF == PatternMDT }

// Released reports whether the file is HSM-released (no data on OSTs).
func (c *Component) Released() bool { return c.Pattern&PatternReleased != 0 }

// Contains reports whether file offset off is in the component's extent.
func (c *Component) Contains(off uint64) bool { return off >= c.Start && off < c.End }

// Stripe returns the OST holding file offset off, which must lie in the
// component, and the end of that stripe (clipped to the component): bytes
// [off, end) are on ost. Lustre counts stripes from file offset 0, not
// from the component's start (components start at a multiple of the stripe
// size). A DoM component returns MDT and its end; an uninstantiated or
// released one ErrNotInstantiated or ErrNoStripes.
func (c *Component) Stripe(off uint64) (ost int, end uint64, err error) {
	if !c.Contains(off) {
		return 0, 0, fmt.Errorf("%w: offset %d outside component [%d, %d)", ErrCorrupt, off, c.Start, c.End)
	}
	switch {
	case c.DoM():
		return MDT, c.End, nil
	case c.Released():
		return 0, 0, fmt.Errorf("%w: HSM released", ErrNoStripes)
	case !c.Instantiated() || len(c.OSTs) == 0:
		return 0, 0, fmt.Errorf("%w: extent [%d, %s)", ErrNotInstantiated, c.Start, endString(c.End))
	case c.StripeSize == 0:
		return 0, 0, fmt.Errorf("%w: stripe size 0", ErrCorrupt)
	}
	ss := uint64(c.StripeSize)
	k := off / ss
	end = c.End
	if k < EOF/ss && (k+1)*ss < end {
		end = (k + 1) * ss
	}
	return c.OSTs[k%uint64(len(c.OSTs))], end, nil
}

// Find returns the component holding file offset off, nil if none does.
// Of FLR mirrors covering off it prefers an instantiated one that is not
// stale.
func (l *Layout) Find(off uint64) *Component {
	var first *Component
	for i := range l.Components {
		c := &l.Components[i]
		if !c.Contains(off) {
			continue
		}
		if c.Instantiated() && c.Flags&FlagStale == 0 {
			return c
		}
		if first == nil {
			first = c
		}
	}
	return first
}

// Decode decodes a lustre.lov / trusted.lov value: lov_user_md_v1, v3, or
// lov_comp_md_v1 with v1 or v3 components. Integers are little-endian (the
// on-disk order, and the host's on x86 and ARM clients).
func Decode(b []byte) (Layout, error) {
	if len(b) < 4 {
		return Layout{}, fmt.Errorf("%w: %d bytes, want at least 4 for the magic", ErrShort, len(b))
	}
	magic := binary.LittleEndian.Uint32(b)
	switch magic {
	case MagicV1, MagicV3:
		c, gen, err := decodePlain(b)
		if err != nil {
			return Layout{}, err
		}
		c.Start, c.End = 0, EOF
		if len(c.OSTs) > 0 || c.DoM() {
			c.Flags = FlagInit
		}
		return Layout{Magic: magic, Gen: uint32(gen), Mirrors: 1, Components: []Component{c}}, nil
	case MagicCompV1:
		return decodeComp(b)
	case MagicForeign:
		return Layout{}, ErrForeign
	}
	if swapped := binary.BigEndian.Uint32(b); swapped == MagicV1 || swapped == MagicV3 || swapped == MagicCompV1 {
		return Layout{}, fmt.Errorf("%w %#08x: a big-endian layout (want little-endian)", ErrMagic, magic)
	}
	return Layout{}, fmt.Errorf("%w %#08x (want %#08x, %#08x or %#08x)", ErrMagic, magic, MagicV1, MagicV3, MagicCompV1)
}

// decodePlain decodes a lov_user_md_v1 or v3 filling b exactly (trailing
// bytes shorter than an object are corrupt); gen is the 16-bit field that
// holds the stripe offset or the layout generation.
func decodePlain(b []byte) (c Component, gen uint16, err error) {
	le := binary.LittleEndian
	c.Magic = le.Uint32(b)
	hdr := sizeV1
	if c.Magic == MagicV3 {
		hdr = sizeV3
	}
	if len(b) < hdr {
		return c, 0, fmt.Errorf("%w: %d bytes, want at least %d for a %s header", ErrShort, len(b), hdr, magicName(c.Magic))
	}
	c.Pattern = le.Uint32(b[4:])
	c.StripeSize = le.Uint32(b[24:])
	count, off := le.Uint16(b[28:]), le.Uint16(b[30:])
	c.StripeCount, c.StripeOffset, gen = int(count), int(off), off
	if count == 0xFFFF {
		c.StripeCount = -1
	}
	if off == 0xFFFF {
		c.StripeOffset = -1
	}
	if c.Magic == MagicV3 {
		pool := b[sizeV1:sizeV3]
		if i := strings.IndexByte(string(pool), 0); i >= 0 {
			pool = pool[:i]
		}
		c.Pool = string(pool)
	}
	rest := len(b) - hdr
	if rest%sizeObject != 0 {
		return c, 0, fmt.Errorf("%w: %d bytes after the %s header, not a whole number of %d-byte objects", ErrCorrupt, rest, magicName(c.Magic), sizeObject)
	}
	n := rest / sizeObject
	if c.StripeCount >= 0 && n > c.StripeCount {
		return c, 0, fmt.Errorf("%w: %d objects for a stripe count of %d", ErrCorrupt, n, c.StripeCount)
	}
	if n > 0 && c.StripeCount > 0 && n < c.StripeCount && c.Pattern&PatternHole == 0 {
		return c, 0, fmt.Errorf("%w: %d objects for a stripe count of %d", ErrCorrupt, n, c.StripeCount)
	}
	if n > 0 && (c.DoM() || c.Released()) {
		return c, 0, fmt.Errorf("%w: %d OST objects in a %s layout", ErrCorrupt, n, patternName(c.Pattern))
	}
	if n > 0 {
		c.OSTs = make([]int, n)
		for i := range n {
			idx := le.Uint32(b[hdr+i*sizeObject+20:])
			if idx > maxOST {
				return c, 0, fmt.Errorf("%w: object %d on OST index %d (at most %d)", ErrCorrupt, i, idx, maxOST)
			}
			c.OSTs[i] = int(idx)
		}
		if c.StripeSize == 0 {
			return c, 0, fmt.Errorf("%w: stripe size 0 with %d objects", ErrCorrupt, n)
		}
	}
	return c, gen, nil
}

// decodeComp decodes a lov_comp_md_v1 of lcm_size bytes (b may be longer:
// a getxattr buffer).
func decodeComp(b []byte) (Layout, error) {
	le := binary.LittleEndian
	if len(b) < sizeComp {
		return Layout{}, fmt.Errorf("%w: %d bytes, want at least %d for a composite header", ErrShort, len(b), sizeComp)
	}
	size := le.Uint32(b[4:])
	l := Layout{Magic: MagicCompV1, Gen: le.Uint32(b[8:]), Mirrors: int(le.Uint16(b[16:])) + 1}
	count := int(le.Uint16(b[14:]))
	switch {
	case uint64(size) > uint64(len(b)):
		return Layout{}, fmt.Errorf("%w: lcm_size %d, have %d bytes", ErrShort, size, len(b))
	case size < sizeComp:
		return Layout{}, fmt.Errorf("%w: lcm_size %d, smaller than the header", ErrCorrupt, size)
	case count == 0:
		return Layout{}, fmt.Errorf("%w: no components", ErrCorrupt)
	case sizeComp+count*sizeEntry > int(size):
		return Layout{}, fmt.Errorf("%w: %d entries do not fit in lcm_size %d", ErrCorrupt, count, size)
	}
	b = b[:size]
	l.Components = make([]Component, 0, count)
	for i := range count {
		e := b[sizeComp+i*sizeEntry:]
		id, flags := le.Uint32(e), le.Uint32(e[4:])
		start, end := le.Uint64(e[8:]), le.Uint64(e[16:])
		off, sz := le.Uint32(e[24:]), le.Uint32(e[28:])
		if start >= end {
			return Layout{}, fmt.Errorf("%w: component %d: extent [%d, %s) is empty", ErrCorrupt, i, start, endString(end))
		}
		if uint64(off) < uint64(sizeComp+count*sizeEntry) || uint64(off)+uint64(sz) > uint64(size) {
			return Layout{}, fmt.Errorf("%w: component %d: blob [%d, +%d) outside [%d, %d)", ErrCorrupt, i, off, sz, sizeComp+count*sizeEntry, size)
		}
		blob := b[off : off+sz]
		if len(blob) < 4 {
			return Layout{}, fmt.Errorf("%w: component %d: blob of %d bytes", ErrCorrupt, i, len(blob))
		}
		if m := le.Uint32(blob); m != MagicV1 && m != MagicV3 {
			return Layout{}, fmt.Errorf("%w: component %d: sub-layout magic %#08x (want %#08x or %#08x)", ErrCorrupt, i, m, MagicV1, MagicV3)
		}
		c, _, err := decodePlain(blob)
		if err != nil {
			return Layout{}, fmt.Errorf("component %d: %w", i, err)
		}
		c.ID, c.Flags, c.Start, c.End = id, flags, start, end
		if c.Flags&FlagInit != 0 && len(c.OSTs) == 0 && !c.DoM() && !c.Released() {
			return Layout{}, fmt.Errorf("%w: component %d: instantiated with no objects", ErrCorrupt, i)
		}
		l.Components = append(l.Components, c)
	}
	return l, nil
}

// Encode writes l in the format Decode reads: a plain v1 or v3 layout when
// l.Magic is MagicV1 or MagicV3 (one component), else a lov_comp_md_v1
// whose component blobs follow the entries in order. Object ids and
// generations are zero; a plain layout's 16-bit offset field holds its
// component's StripeOffset (l.Gen is not written). It is for tests and
// tools that build layouts.
func Encode(l Layout) []byte {
	le := binary.LittleEndian
	if l.Magic == MagicV1 || l.Magic == MagicV3 {
		c := l.Components[0]
		c.Magic = l.Magic
		return encodePlain(c)
	}
	blobs := make([][]byte, len(l.Components))
	size := sizeComp + len(l.Components)*sizeEntry
	for i, c := range l.Components {
		blobs[i] = encodePlain(c)
		size += len(blobs[i])
	}
	b := make([]byte, sizeComp, size)
	le.PutUint32(b, MagicCompV1)
	le.PutUint32(b[4:], uint32(size))
	le.PutUint32(b[8:], l.Gen)
	le.PutUint16(b[14:], uint16(len(l.Components)))
	le.PutUint16(b[16:], uint16(max(l.Mirrors-1, 0)))
	off := sizeComp + len(l.Components)*sizeEntry
	for i, c := range l.Components {
		e := make([]byte, sizeEntry)
		le.PutUint32(e, c.ID)
		le.PutUint32(e[4:], c.Flags)
		le.PutUint64(e[8:], c.Start)
		le.PutUint64(e[16:], c.End)
		le.PutUint32(e[24:], uint32(off))
		le.PutUint32(e[28:], uint32(len(blobs[i])))
		b = append(b, e...)
		off += len(blobs[i])
	}
	for _, blob := range blobs {
		b = append(b, blob...)
	}
	return b
}

func encodePlain(c Component) []byte {
	le := binary.LittleEndian
	if c.Magic != MagicV3 {
		c.Magic = MagicV1
	}
	hdr := sizeV1
	if c.Magic == MagicV3 {
		hdr = sizeV3
	}
	b := make([]byte, hdr+len(c.OSTs)*sizeObject)
	le.PutUint32(b, c.Magic)
	le.PutUint32(b[4:], c.Pattern)
	le.PutUint32(b[24:], c.StripeSize)
	le.PutUint16(b[28:], uint16(c.StripeCount))
	le.PutUint16(b[30:], uint16(c.StripeOffset))
	if c.Magic == MagicV3 {
		copy(b[sizeV1:sizeV3-1], c.Pool)
	}
	for i, ost := range c.OSTs {
		le.PutUint32(b[hdr+i*sizeObject+20:], uint32(ost))
	}
	return b
}

func magicName(m uint32) string {
	if m == MagicV3 {
		return "lov_user_md_v3"
	}
	return "lov_user_md_v1"
}

func patternName(p uint32) string {
	switch {
	case p&PatternReleased != 0:
		return "released"
	case p&0xFFFF == PatternMDT:
		return "data-on-MDT"
	}
	return fmt.Sprintf("pattern %#x", p)
}

func endString(end uint64) string {
	if end == EOF {
		return "EOF"
	}
	return fmt.Sprint(end)
}
