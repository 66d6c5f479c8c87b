package dataset

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// maxLineBytes bounds one line of a LIBSVM file (a sample with about five million non-zeros).
const maxLineBytes = 64 << 20

// ReadLIBSVMFile reads the LIBSVM file at path (see ReadLIBSVM).
func ReadLIBSVMFile(path string, on OnSample) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadLIBSVM(f, path, on)
}

// ReadLIBSVM reads samples in the LIBSVM/svmlight text format, one per line:
//
//	<label> <index>:<value> <index>:<value> ... [# comment]
//
// A positive label is +1, zero or negative -1 (so both {-1,+1} and {0,1} files work). Indices
// start at 1 and must be ascending within a line; index i is model parameter i-1. Values are read
// as 32-bit floats. svmlight's "qid:N" tokens are skipped; blank and comment lines are ignored.
// on (if not nil) sees every sample as it is read. An error names the input (name) and the line;
// an input without samples is an error.
func ReadLIBSVM(r io.Reader, name string, on OnSample) (*Dataset, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), maxLineBytes)
	d := New(name)
	var features []uint32
	var values []float32
	for line := 1; sc.Scan(); line++ {
		label, ok, err := parseLine(sc.Bytes(), &features, &values)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if ok {
			d.appendSorted(label, features, values)
			d.added(on)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line is longer than %d MiB", name, maxLineBytes>>20)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if d.Len() == 0 {
		return nil, fmt.Errorf("%s: no samples", name)
	}
	return d, nil
}

// parseLine parses one line into *features and *values (reusing them) and returns its label;
// ok is false for a blank or comment line.
func parseLine(b []byte, features *[]uint32, values *[]float32) (label float64, ok bool, err error) {
	*features, *values = (*features)[:0], (*values)[:0]
	tok, rest := nextToken(b)
	if len(tok) == 0 {
		return 0, false, nil
	}
	if label, err = strconv.ParseFloat(string(tok), 64); err != nil {
		return 0, false, fmt.Errorf("bad label %q", tok)
	}
	for {
		tok, rest = nextToken(rest)
		if len(tok) == 0 {
			return label, true, nil
		}
		colon := -1
		for k, c := range tok {
			if c == ':' {
				colon = k
				break
			}
		}
		if colon < 0 {
			return 0, false, fmt.Errorf("bad feature %q (want index:value)", tok)
		}
		if string(tok[:colon]) == "qid" {
			continue
		}
		index, err := strconv.ParseUint(string(tok[:colon]), 10, 32)
		if err != nil || index == 0 {
			return 0, false, fmt.Errorf("bad feature index in %q (want an integer from 1 to %d)", tok, uint32(1<<32-1))
		}
		param := uint32(index - 1)
		if n := len(*features); n > 0 && param <= (*features)[n-1] {
			return 0, false, fmt.Errorf("feature index %d after %d (indices must be ascending)", index, (*features)[n-1]+1)
		}
		v, err := parseValue(tok[colon+1:])
		if err != nil {
			return 0, false, fmt.Errorf("bad feature value in %q", tok)
		}
		*features = append(*features, param)
		*values = append(*values, v)
	}
}

// parseValue parses a feature value; "1", the most common value of binary datasets, takes a
// fast path.
func parseValue(b []byte) (float32, error) {
	if len(b) == 1 && b[0] == '1' {
		return 1, nil
	}
	v, err := strconv.ParseFloat(string(b), 32)
	return float32(v), err
}

// nextToken returns the first space-separated token of b and what follows it; a '#' starts a
// comment that runs to the end of the line.
func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	if i == len(b) || b[i] == '#' {
		return nil, nil
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' && b[j] != '\r' && b[j] != '#' {
		j++
	}
	return b[i:j], b[j:]
}

// WriteLIBSVM writes d in the LIBSVM format ReadLIBSVM reads (labels +1/-1, 1-based indices,
// values in the shortest form that reads back to the same float32), so that generated datasets
// can be read back or given to other tools.
func WriteLIBSVM(w io.Writer, d *Dataset) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for i := range d.Len() {
		s := d.Sample(i)
		buf = buf[:0]
		if s.Label > 0 {
			buf = append(buf, "+1"...)
		} else {
			buf = append(buf, "-1"...)
		}
		for k, f := range s.Features {
			buf = append(buf, ' ')
			buf = strconv.AppendUint(buf, uint64(f)+1, 10)
			buf = append(buf, ':')
			buf = strconv.AppendFloat(buf, float64(s.Values[k]), 'g', -1, 32)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}
