// Package pfsproto is the binary protocol between the emulated PFS client and
// its data servers: length-prefixed frames carrying requests and responses
// tagged with request ids, so that a connection pipelines many requests and
// the server answers them in any order.
//
// A frame is a 4-byte big-endian body length followed by the body; bodies
// longer than MaxBody are refused. Request body:
//
//	id uint64 | op uint8 | a int64 | b int64 | path length uint16 | path | data
//
// Response body:
//
//	id uint64 | status uint8 | a int64 | data
//
// Integers are big-endian. Per operation (a, b, data):
//
//	Ping      -, -, -                    -> -
//	Read      offset, length, -          -> a = bytes read, data = the bytes
//	Write     offset, -, bytes           -> a = bytes written
//	Create    mode, -, -                 -> -
//	Stat      -, -, -                    -> data = FileInfo
//	Truncate  size, -, -                 -> -
//	Unlink    -, -, -                    -> -
//	Mkdir     mode, -, -                 -> -
//	ReadDir   -, -, -                    -> data = uint32 count, count FileInfos
//	Fsync     -, -, -                    -> -
//	Hello     I/O node index, version, - -> - (first on a connection; see OpHello)
//
// The hello's version (Version; 0 from older clients) decides the statuses
// the server may answer on that connection: a version-0 client gets
// StatusError where a newer one gets StatusNoSpace or StatusQuota, so a full
// data server reaches new clients as ENOSPC or EDQUOT and old ones as the
// I/O error they always got (StatusFor).
//
// A response with a status other than StatusOK carries an error message as
// its data. FileInfo: name length uint16 | name | size int64 | mode uint32 |
// modification time int64 (Unix ns) | is-dir uint8.
//
//	hdr, _ := pfsproto.AppendRequest(nil, &pfsproto.Request{ID: id, Op: pfsproto.OpWrite, Path: p, A: off, Data: data})
//	net.Buffers{hdr, data}.WriteTo(conn)
//	r := pfsproto.NewReader(conn, 0)
//	body, err := r.Next(buf)           // one frame; ErrFrameTooLarge, ErrMalformed
//	resp, err := pfsproto.DecodeResponse(body)
package pfsproto
