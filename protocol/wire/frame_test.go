package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
)

type testFrame struct {
	kind    byte
	payload []byte
}

func sampleFrames() []testFrame {
	big := make([]byte, 3*readChunk+17) // crosses the chunked-read path
	for i := range big {
		big[i] = byte(i * 7)
	}
	return []testFrame{
		{KindHello, []byte("hi")},
		{KindMessage, nil},
		{KindMessage, []byte{0}},
		{200, bytes.Repeat([]byte("abc"), 1000)},
		{KindMessage, big},
	}
}

func writeFrames(t testing.TB, frames []testFrame) []byte {
	var buf bytes.Buffer
	for _, f := range frames {
		if err := WriteFrame(&buf, f.kind, f.payload); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func readAll(t *testing.T, r *bufio.Reader, maxBytes int) []testFrame {
	t.Helper()
	var got []testFrame
	for {
		kind, payload, err := ReadFrame(r, maxBytes)
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatalf("frame %d: %v", len(got), err)
		}
		got = append(got, testFrame{kind, payload})
	}
}

func TestFrameRoundTrip(t *testing.T) {
	frames := sampleFrames()
	stream := writeFrames(t, frames)
	for _, tc := range []struct {
		name string
		r    io.Reader
		size int // bufio buffer; 16 (the minimum) makes headers straddle refills
	}{
		{"whole", bytes.NewReader(stream), 4096},
		{"one byte", iotest.OneByteReader(bytes.NewReader(stream)), 4096},
		{"one byte, small buffer", iotest.OneByteReader(bytes.NewReader(stream)), 16},
		{"half", iotest.HalfReader(bytes.NewReader(stream)), 16},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(stream)), 4096},
	} {
		name := tc.name
		got := readAll(t, bufio.NewReaderSize(tc.r, tc.size), 0)
		if len(got) != len(frames) {
			t.Fatalf("%s: read %d frames, want %d", name, len(got), len(frames))
		}
		for i := range frames {
			if got[i].kind != frames[i].kind || !bytes.Equal(got[i].payload, frames[i].payload) {
				t.Errorf("%s: frame %d: kind %d, %d bytes; want kind %d, %d bytes", name, i,
					got[i].kind, len(got[i].payload), frames[i].kind, len(frames[i].payload))
			}
		}
	}
}

func TestFrameLayout(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFrame(&buf, KindMessage, []byte("xyz")); err != nil {
		t.Fatal(err)
	}
	if want := []byte{0, 0, 0, 4, KindMessage, 'x', 'y', 'z'}; !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("frame bytes %x, want %x", buf.Bytes(), want)
	}
}

func TestFrameRejects(t *testing.T) {
	read := func(b []byte, maxBytes int) error {
		_, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(b)), maxBytes)
		return err
	}
	if err := read([]byte{0, 0, 0, 0, 1}, 100); !errors.Is(err, ErrEmptyFrame) {
		t.Errorf("zero length: %v", err)
	}
	if err := read([]byte{0, 0, 0, 101}, 100); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("101 bytes, limit 100: %v", err)
	}
	if err := read([]byte{0, 0, 0, 100, 1}, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("100 bytes, limit 100, truncated: %v", err)
	}
	if err := read([]byte{0xff, 0xff, 0xff, 0xff}, 0); !errors.Is(err, ErrFrameTooLarge) || !strings.Contains(err.Error(), "4294967295") {
		t.Errorf("4 GiB frame with the default limit: %v", err)
	}
	if err := read(nil, 0); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	// Every strict prefix of a frame ends the stream inside it.
	frame := writeFrames(t, []testFrame{{KindMessage, []byte("payload")}})
	for n := 1; n < len(frame); n++ {
		if err := read(frame[:n], 0); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("prefix of %d bytes: %v, want io.ErrUnexpectedEOF", n, err)
		}
	}
}

// TestFrameHostileLength checks that a peer announcing a large frame and sending little of it
// does not make ReadFrame allocate the announced size.
func TestFrameHostileLength(t *testing.T) {
	hdr := binary.BigEndian.AppendUint32(nil, 60<<20)
	hdr = append(hdr, KindMessage, 1, 2, 3)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		_, _, err := ReadFrame(bufio.NewReader(bytes.NewReader(hdr)), 64<<20)
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("truncated 60 MiB frame: %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4<<20 {
		t.Errorf("10 truncated 60 MiB frames allocated %d bytes", grew)
	}
}

type shortWriter struct{ n int }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return w.n, io.ErrShortWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteFrameError(t *testing.T) {
	if err := WriteFrame(&shortWriter{n: 6}, KindMessage, []byte("payload")); err == nil {
		t.Errorf("short write not reported")
	}
	if err := WriteFrame(&shortWriter{n: 3}, KindMessage, nil); err == nil {
		t.Errorf("short header write not reported")
	}
}

func TestHello(t *testing.T) {
	h := Hello{Version: FormatVersion, Cluster: "prod-eu", Protocol: "helios-1", From: 4}
	b, err := AppendHello(nil, h)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHello(b)
	if err != nil || got != h {
		t.Fatalf("DecodeHello = %+v, %v; want %+v", got, err, h)
	}
	checkPrefixesAndTrailer(t, b, func(b []byte) error { _, err := DecodeHello(b); return err })

	other, err := AppendHello(nil, Hello{Version: FormatVersion + 1, Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeHello(other); !errors.Is(err, ErrVersionMismatch) || got.Version != FormatVersion+1 {
		t.Errorf("version mismatch: %+v, %v", got, err)
	}
	if _, err := AppendHello(nil, Hello{Cluster: strings.Repeat("c", MaxNameLen+1)}); err == nil {
		t.Errorf("over-long cluster name encoded")
	}
}

// FuzzReadFrame reads frames from arbitrary streams, delivered in pieces of random size: it must
// never panic, every error must be one ReadFrame documents, and every frame it returns must be
// one WriteFrame reproduces byte for byte from the stream.
func FuzzReadFrame(f *testing.F) {
	f.Add(writeFrames(f, sampleFrames()[:4]), uint8(0))
	f.Add(writeFrames(f, sampleFrames()[:2]), uint8(1))
	f.Add([]byte{0, 0, 0, 0}, uint8(0))
	f.Add([]byte{0, 1, 0, 0, 7}, uint8(3))
	f.Add([]byte{0, 0, 0, 2, 1}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, split uint8) {
		const maxBytes = 1 << 12
		var r io.Reader = bytes.NewReader(stream)
		switch split % 3 {
		case 1:
			r = iotest.OneByteReader(r)
		case 2:
			r = iotest.HalfReader(r)
		}
		br := bufio.NewReaderSize(r, 16)
		off := 0
		for {
			kind, payload, err := ReadFrame(br, maxBytes)
			switch {
			case err == io.EOF:
				if off != len(stream) {
					t.Fatalf("io.EOF at offset %d of %d", off, len(stream))
				}
				return
			case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrEmptyFrame), errors.Is(err, ErrFrameTooLarge):
				return
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			}
			if len(payload)+1 > maxBytes {
				t.Fatalf("frame of %d bytes over the limit", len(payload)+1)
			}
			var buf bytes.Buffer
			if err := WriteFrame(&buf, kind, payload); err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(stream[off:], buf.Bytes()) {
				t.Fatalf("frame at offset %d re-encodes differently", off)
			}
			off += buf.Len()
		}
	})
}
