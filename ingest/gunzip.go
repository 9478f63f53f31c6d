package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// NewGzipReader reads a gzip file as `gzip -d` does: every member of a
// concatenation (`cat a.gz b.gz`, what pigz and log rotation write) in turn,
// and zero bytes after the last member ignored (the padding that tape tools
// and some uploaders add to a block size; gzip -d accepts it with "trailing
// zero bytes ignored"). Anything else after a member is an error that says
// where, never a silent end and never an "invalid header" for a complete
// file. Every member's checksum is verified.
func NewGzipReader(r io.Reader) (io.ReadCloser, error) {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReaderSize(r, 64<<10)
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, err
	}
	zr.Multistream(false)
	return &gzipMembers{br: br, zr: zr}, nil
}

type gzipMembers struct {
	br *bufio.Reader
	zr *gzip.Reader
	// members counts the members read to their end.
	members int
	done    bool
	err     error
}

func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		if g.err != nil {
			return 0, g.err
		}
		if g.done {
			return 0, io.EOF
		}
		n, err := g.zr.Read(p)
		if err == nil || n > 0 && err != io.EOF {
			return n, err
		}
		if err != io.EOF {
			g.err = err
			return n, err
		}
		// One member ended, checksum verified.
		g.members++
		if err := g.next(); err != nil {
			g.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
}

// next moves to the next member, or ends the stream at EOF or at trailing
// zeros.
func (g *gzipMembers) next() error {
	head, err := g.br.Peek(2)
	if len(head) == 0 && err == io.EOF {
		g.done = true
		return nil
	}
	if bytes.Equal(head, gzipMagic) {
		if err := g.zr.Reset(g.br); err != nil {
			return fmt.Errorf("gzip member %d: %w", g.members+1, err)
		}
		g.zr.Multistream(false)
		return nil
	}
	// Not a member: acceptable only as zeros to the end.
	var zeros int64
	for {
		b, err := g.br.ReadByte()
		if errors.Is(err, io.EOF) {
			g.done = true
			return nil
		}
		if err != nil {
			return err
		}
		if b != 0 {
			return fmt.Errorf("gzip: %d bytes of padding, then data that is not a gzip member, after member %d", zeros, g.members)
		}
		zeros++
	}
}

func (g *gzipMembers) Close() error { return g.zr.Close() }
