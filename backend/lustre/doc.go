// Package lustre decodes a Lustre file's striping layout, the value of its
// "lustre.lov" (or "trusted.lov") extended attribute, in pure Go, and maps
// file offsets to the OSTs (object storage targets) holding them. It reads
// the little-endian structures of Lustre's public header
// lustre/include/uapi/linux/lustre/lustre_user.h: lov_user_md_v1 and v3
// (plain layouts, v3 with a pool name) and lov_comp_md_v1 (composite
// layouts: progressive file layouts, self-extending layouts, mirrors), whose
// entries each hold a v1 or v3 sub-layout for an extent of the file.
//
//	value, _ := unix.Getxattr(path, "lustre.lov", buf)
//	l, err := lustre.Decode(value)
//	for off < end {
//		c := l.Find(off) // the component holding off
//		ost, stripeEnd, err := c.Stripe(off)
//		...
//	}
//
// Decode never panics on any input: short, corrupt or unknown input is an
// error wrapping ErrShort, ErrCorrupt or ErrMagic.
package lustre
