package otlp

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"strconv"
	"strings"
)

// readFramed decodes the collector file exporter's framed layout: records of
// a 4-byte big-endian length and a payload (protobuf or JSON, each optionally
// its own zstd frame). A truncated last record is a warning; every record
// before it is kept.
func (d *state) readFramed(ctx context.Context, r *bufferedFrames, limit int64) error {
	var (
		hdr      [4]byte
		payloads = map[string]int{}
		rec      int
		off      int64
		empty    int // empty records in a row
	)
	defer d.closeZstd()
	for {
		rec++
		d.pos = "record " + strconv.Itoa(rec)
		n, err := r.header(&hdr)
		if err == io.EOF {
			rec--
			break
		}
		if err == io.ErrUnexpectedEOF {
			d.warnf("truncated", "the file ends inside a record header (%d of 4 bytes at byte %d); every record before it kept", n, off)
			break
		}
		if err != nil {
			return err
		}
		if rec%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		size := int64(binary.BigEndian.Uint32(hdr[:]))
		off += 4
		if size == 0 {
			if empty++; empty == maxEmptyRecords {
				d.warnf("malformed-record", "%d empty records in a row at byte %d: zero fill (a file preallocated and never written, or /dev/zero), not records; the rest of the input skipped", empty, off-4*int64(empty))
				rec -= empty
				break
			}
		} else {
			empty = 0
		}
		if size > limit {
			d.warnf("record-too-large", "record of %d bytes is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", size, limit)
			got, err := r.discard(int(size))
			off += int64(got)
			if err != nil {
				d.warnf("truncated", "the file ends inside the record (%d of %d bytes)", got, size)
				break
			}
			continue
		}
		payload, err := r.record(int(size))
		off += int64(len(payload))
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			d.warnf("truncated", "the file ends inside the record (%d of %d bytes); every record before it kept", len(payload), size)
			break
		}
		if err != nil {
			return err
		}
		kind, err := d.payload(payload, encAuto, limit)
		d.consumed = off
		r.release()
		payloads[kind]++
		if err != nil {
			d.warnf("malformed-record", "%v", err)
		}
	}
	src := &d.t.Sources[d.src]
	setMeta(src, "records", strconv.Itoa(rec))
	var kinds []string
	for _, k := range []string{"proto", "proto+zstd", "json", "json+zstd"} {
		if payloads[k] > 0 {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) > 0 {
		setMeta(src, "payloads", strings.Join(kinds, ","))
	}
	return nil
}

// maxEmptyRecords is how many empty records in a row end a framed input: an
// exporter does not write empty batches, and zero fill reads as nothing else.
const maxEmptyRecords = 64

// bufferedFrames reads a framed input's records from a stream. A record
// that fits the read buffer is decoded where it lies; a larger one is
// copied into buf. Each method reports the end of the input as io.ReadFull
// does.
type bufferedFrames struct {
	r      *bufio.Reader
	buf    []byte
	peeked int // the bytes of the record in r's buffer, to discard on release
}

// header reads a record's 4-byte header: n bytes, io.EOF when none was
// left, io.ErrUnexpectedEOF when fewer than 4.
func (f *bufferedFrames) header(hdr *[4]byte) (n int, err error) { return io.ReadFull(f.r, hdr[:]) }

// record returns the next n bytes, valid until release; less (what was
// left) with io.EOF or io.ErrUnexpectedEOF at the end of the input.
func (f *bufferedFrames) record(n int) ([]byte, error) {
	if n <= f.r.Size() {
		b, err := f.r.Peek(n)
		f.peeked = len(b)
		return b, err
	}
	if cap(f.buf) < n {
		f.buf = make([]byte, n)
	}
	got, err := io.ReadFull(f.r, f.buf[:n])
	return f.buf[:got], err
}

// release says the decoder is done with the record's bytes.
func (f *bufferedFrames) release() {
	f.r.Discard(f.peeked)
	f.peeked = 0
}

// discard skips n bytes; got is less, with an error, at the end of the
// input.
func (f *bufferedFrames) discard(n int) (got int, err error) { return f.r.Discard(n) }
